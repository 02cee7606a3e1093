package harness

import (
	"membench/jaxlike/jit"
	"membench/traces"
	"membench/xprof"
)

// CompileOptions configure CompileTrace (package jit's options: donation
// mode, the heap simulator's alignment, the input's name).
type CompileOptions = jit.CompileOptions

// ParseDonate reads `traces compile --donate` (auto or none).
var ParseDonate = jit.ParseDonate

// DefaultCompileAlignment is the heap simulator's default alignment for
// CompileTrace, 256 B (allocator-spec §6.2).
const DefaultCompileAlignment = jit.DefaultAlignment

// CompileTrace turns a per-op trace with step marks into a compiled one
// (format version 2), an approximation of jit that says so in its meta
// (jit.Compile). It lives here so that the CLI reaches XLA's rules
// through the harness, as it reaches every framework's.
func CompileTrace(src *Source, opt CompileOptions) (*traces.SliceReader, error) {
	r, err := src.Open()
	if err != nil {
		return nil, err
	}
	defer r.Close()
	if opt.Source == "" {
		opt.Source = src.Name
	}
	return jit.Compile(r, opt)
}

// TraceNotes are what a trace's meta says every run that replays it must
// repeat: the approximation a compiled trace states
// (jit.ApproximationKey), so that no figure measured on it is mistaken
// for a recording's, and the programs a TPU chip's profile shows loaded
// but a replay does not load (xprof.ProgramsKey).
func TraceNotes(m traces.Meta) []string {
	var out []string
	if a := m.Get(jit.ApproximationKey); a != "" {
		out = append(out, jit.ApproximationKey+": "+a)
	}
	if p := m.Get(xprof.ProgramsKey); p != "" {
		out = append(out, xprof.ProgramsKey+": "+p)
	}
	return out
}
