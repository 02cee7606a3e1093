package benchtab

import (
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strings"

	"golang.org/x/perf/benchfmt"
)

// Input is one benchfmt input of Read.
type Input struct {
	// Label is the input's .file value (the column label by default).
	Label string
	// Name names the input in error messages (its path).
	Name string
	R    io.Reader
}

// ReadFiles reads the benchfmt files args as benchstat does and
// compares them: an argument label=path sets the file's .file label, a
// path given twice is told apart as path#0, path#1, and "-" reads stdin.
// Every file is opened before any is read, so a missing file is an error
// up front.
func ReadFiles(args []string, stdin io.Reader, opts Options) (*Tables, error) {
	if len(args) == 0 {
		return nil, errors.New("no input files")
	}
	type arg struct{ path, label string }
	var as []arg
	count := make(map[string]int)
	labelled := make([]bool, len(args))
	for i, a := range args {
		path, label := a, a
		if j := strings.IndexByte(a, '='); j >= 0 {
			label, path = a[:j], a[j+1:]
			labelled[i] = true
		} else {
			count[path]++
		}
		as = append(as, arg{path, label})
	}
	seen := make(map[string]int)
	for i := range as {
		if !labelled[i] && count[as[i].path] > 1 {
			as[i].label = fmt.Sprintf("%s#%d", as[i].path, seen[as[i].path])
			seen[as[i].path]++
		}
	}
	var inputs []Input
	for _, a := range as {
		if a.path == "-" {
			if stdin == nil {
				return nil, errors.New("-: no standard input")
			}
			inputs = append(inputs, Input{a.label, "<stdin>", stdin})
			continue
		}
		f, err := os.Open(a.path)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		inputs = append(inputs, Input{a.label, a.path, f})
	}
	return Read(inputs, opts)
}

// Read reads the inputs in order and builds benchstat's tables.
// Syntax errors (*benchfmt.SyntaxError, which name the file and line)
// are returned joined, after the whole input has been read.
func Read(inputs []Input, opts Options) (*Tables, error) {
	b, err := NewBuilder(opts)
	if err != nil {
		return nil, err
	}
	var rd benchfmt.Reader
	var bad []error
	for _, in := range inputs {
		end := NewEndCheck(in.R)
		rd.Reset(end, in.Name, ".file", in.Label)
		for rd.Scan() {
			switch rec := rd.Result().(type) {
			case *benchfmt.SyntaxError:
				bad = append(bad, rec)
			case *benchfmt.UnitMetadata:
				if err := b.AddUnit(rec); err != nil {
					bad = append(bad, err)
				}
			case *benchfmt.Result:
				if err := configBound(rec); err != nil {
					// The rest costs as much again: stop here (and
					// not at the end check, which would find the
					// input cut where reading stopped).
					return nil, errors.Join(append(bad, err)...)
				}
				if err := finite(rec); err != nil {
					bad = append(bad, err)
					continue
				}
				b.Add(rec)
			}
		}
		if err := rd.Err(); err != nil {
			if long := end.TooLong(in.Name, err); long != nil {
				return nil, long
			}
			return nil, err
		}
		if err := end.Err(in.Name); err != nil {
			bad = append(bad, err)
		}
	}
	if len(bad) > 0 {
		return nil, errors.Join(bad...)
	}
	return b.Build()
}

// maxConfigKeys bounds the configuration keys in effect at a result (go
// test writes four: goos, goarch, pkg, cpu; membench none). Each result
// carries the whole configuration, and benchproc keeps a key for each
// distinct one, so a file that adds keys one by one between results cost
// time and memory quadratic in its size: 5,000 keys, a 90 KB file, took
// 1.3 GB and more than 5 s.
const maxConfigKeys = 64

// configBound refuses a result under more than maxConfigKeys
// configuration keys (the .file label benchtab adds is not counted), as a
// syntax error at its line.
func configBound(r *benchfmt.Result) error {
	n := 0
	for _, c := range r.Config {
		if !strings.HasPrefix(c.Key, ".") {
			n++
		}
	}
	if n <= maxConfigKeys {
		return nil
	}
	file, line := r.Pos()
	return &benchfmt.SyntaxError{FileName: file, Line: line, Msg: fmt.Sprintf("%d configuration keys in effect, more than the limit of %d (go test writes 4: goos, goarch, pkg, cpu)", n, maxConfigKeys)}
}

// finite refuses a result with a value that is not a finite number, as a
// syntax error at its line. benchfmt reads NaN and ±Inf as floats, but
// no measurement is one, and the statistics cannot take them: the
// Mann-Whitney U test of a NaN sample never returns (go-moremath's
// MannWhitneyUTest; found by FuzzRead), and an infinite one prints as
// "+InfT" in a table of its own.
func finite(r *benchfmt.Result) error {
	for _, v := range r.Values {
		if math.IsNaN(v.Value) || math.IsInf(v.Value, 0) {
			unit, x := v.Unit, v.Value
			if v.OrigUnit != "" {
				unit, x = v.OrigUnit, v.OrigValue
			}
			file, line := r.Pos()
			return &benchfmt.SyntaxError{FileName: file, Line: line, Msg: fmt.Sprintf("%s: %v is not a finite number", unit, x)}
		}
	}
	return nil
}
