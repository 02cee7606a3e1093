package gen

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"

	"membench/traces"
	"membench/traces/corpus"
)

var update = flag.Bool("update", false, "rewrite the golden traces in testdata")

// replayStats is what replaying a trace through traces.Check shows.
type replayStats struct {
	events, allocs, frees int64
	marks                 []string
	peak, live            int64 // bytes
	liveN                 int   // live buffers at the end
}

// replay drains r through traces.Check, following live bytes. onEvent, if
// not nil, sees every event with the live bytes after it.
func replay(t testing.TB, r traces.Reader, keepMarks bool, onEvent func(ev traces.Event, live int64)) replayStats {
	t.Helper()
	defer r.Close()
	cr := traces.Check(r)
	var tr traces.Tracker[int64]
	var s replayStats
	for {
		ev, err := cr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("event %d: %v", s.events, err)
		}
		s.events++
		switch ev.Op {
		case traces.OpAlloc:
			if err := tr.Alloc(ev.ID, ev.Size, ev.Size); err != nil {
				t.Fatal(err)
			}
			s.allocs++
			s.live += ev.Size
			s.peak = max(s.peak, s.live)
		case traces.OpFree:
			size, err := tr.Free(ev.ID)
			if err != nil {
				t.Fatal(err)
			}
			s.frees++
			s.live -= size
		case traces.OpMark:
			if keepMarks {
				s.marks = append(s.marks, ev.Label)
			}
		}
		if onEvent != nil {
			onEvent(ev, s.live)
		}
	}
	s.liveN = tr.Live()
	return s
}

func mustNew(t testing.TB, kind string, seed uint64, p map[string]string) traces.Reader {
	t.Helper()
	r, err := New(kind, seed, p)
	if err != nil {
		t.Fatalf("New(%s, %v): %v", kind, p, err)
	}
	return r
}

func native(t testing.TB, r traces.Reader) []byte {
	t.Helper()
	defer r.Close()
	var buf bytes.Buffer
	if _, err := traces.WriteNative(&buf, r, traces.WriterOptions{}); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// tiny dimensions shared by the small configurations.
var tinyLM = map[string]string{"layers": "1", "d_model": "8", "heads": "2", "vocab": "16"}

func with(base map[string]string, kv ...string) map[string]string {
	m := map[string]string{}
	for k, v := range base {
		m[k] = v
	}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return m
}

// goldens are the small configurations whose native output is kept in
// testdata.
var goldens = []struct {
	file, kind string
	params     map[string]string
}{
	{"transformer-train.trace", "transformer-train", with(tinyLM, "ctx", "4", "batch", "2", "seq", "4", "steps", "2")},
	{"transformer-train-llama.trace", "transformer-train", with(tinyLM, "arch", "llama", "ffn", "24", "layers", "2", "batch", "2", "seq", "4", "steps", "2",
		"dtype", "bf16", "attention", "flash", "checkpointing", "full", "optimizer", "sgd")},
	{"llm-serve.trace", "llm-serve", with(tinyLM, "ctx", "16", "requests", "5", "prompt_min", "2", "prompt_max", "9",
		"output_min", "1", "output_max", "6", "max_batch", "2", "block_tokens", "4", "arrival", "0.7")},
	{"llm-serve-concat.trace", "llm-serve", with(tinyLM, "arch", "llama", "ffn", "24", "requests", "4", "prompt_min", "2", "prompt_max", "6",
		"output_min", "1", "output_max", "4", "max_batch", "3", "kv", "concat", "arrival", "1.5", "dtype", "fp16")},
	{"cnn-train.trace", "cnn-train", map[string]string{"depth": "resnet18", "batch": "2", "image": "32", "classes": "10", "steps": "2"}},
}

func TestGolden(t *testing.T) {
	for _, g := range goldens {
		t.Run(g.file, func(t *testing.T) {
			a := native(t, mustNew(t, g.kind, 7, g.params))
			b := native(t, mustNew(t, g.kind, 7, g.params))
			if !bytes.Equal(a, b) {
				t.Fatal("two runs with the same seed differ")
			}
			path := filepath.Join("testdata", g.file)
			if *update {
				if err := os.MkdirAll("testdata", 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, a, 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run go test -update to create it)", err)
			}
			if !bytes.Equal(a, want) {
				t.Errorf("output differs from %s (run go test -update if the change is intended)\n%s", path, firstDiff(a, want))
			}
			// The golden file reads back as the same trace.
			r, err := traces.OpenReader(path, bytes.NewReader(want), traces.DefaultOpenOptions)
			if err != nil {
				t.Fatal(err)
			}
			replay(t, r, false, nil)
		})
	}
}

func firstDiff(a, b []byte) string {
	la, lb := strings.Split(string(a), "\n"), strings.Split(string(b), "\n")
	for i := range min(len(la), len(lb)) {
		if la[i] != lb[i] {
			return fmt.Sprintf("line %d: got %q, want %q", i+1, la[i], lb[i])
		}
	}
	return fmt.Sprintf("got %d lines, want %d", len(la), len(lb))
}

func TestSeeds(t *testing.T) {
	p := with(tinyLM, "requests", "20", "prompt_max", "40", "output_max", "30")
	a := native(t, mustNew(t, "llm-serve", 1, p))
	b := native(t, mustNew(t, "llm-serve", 2, p))
	if bytes.Equal(a, b) {
		t.Fatal("llm-serve: seeds 1 and 2 give the same trace")
	}
	ea, _ := traces.ReadAll(mustNew(t, "llm-serve", 1, p))
	eb, _ := traces.ReadAll(mustNew(t, "llm-serve", 2, p))
	if slices.Equal(ea, eb) {
		t.Fatal("llm-serve: seeds 1 and 2 give the same events")
	}
	// The training kinds do not depend on the seed (only the meta does).
	for _, g := range goldens {
		if g.kind == "llm-serve" {
			continue
		}
		x, _ := traces.ReadAll(mustNew(t, g.kind, 1, g.params))
		y, _ := traces.ReadAll(mustNew(t, g.kind, 99, g.params))
		if !slices.Equal(x, y) {
			t.Errorf("%s: events depend on the seed", g.file)
		}
	}
}

func TestKindsAndParams(t *testing.T) {
	if got, want := Kinds(), []string{"cnn-train", "llm-serve", "transformer-train"}; !slices.Equal(got, want) {
		t.Fatalf("Kinds() = %v, want %v", got, want)
	}
	if Params("nope") != nil {
		t.Error("Params of an unknown kind is not nil")
	}
	fixed := []string{"source", "licence", "description", "kind", "seed"}
	for _, k := range Kinds() {
		ps := Params(k)
		if len(ps) == 0 {
			t.Fatalf("%s: no parameters", k)
		}
		var names []string
		for _, p := range ps {
			if p.Doc == "" || p.Default == "" {
				t.Errorf("%s: parameter %s lacks a doc or a default", k, p.Name)
			}
			if slices.Contains(fixed, p.Name) || strings.HasPrefix(p.Name, "persistent") {
				t.Errorf("%s: parameter %s collides with a meta key", k, p.Name)
			}
			names = append(names, p.Name)
		}
		if !slices.IsSorted(names) {
			t.Errorf("%s: parameters not sorted: %v", k, names)
		}
		r := mustNew(t, k, 42, map[string]string{})
		m := r.Meta()
		r.Close()
		var keys []string
		for _, kv := range m {
			keys = append(keys, kv.Key)
		}
		want := append(append(slices.Clone(fixed), names...), "persistent-buffers", "persistent-bytes")
		if !slices.Equal(keys, want) {
			t.Errorf("%s: meta keys %v, want %v", k, keys, want)
		}
		if m.Get("kind") != k || m.Get("seed") != "42" || m.Get("source") != "membench generator" ||
			m.Get("licence") != "generated (no licence needed)" || m.Get("description") == "" {
			t.Errorf("%s: meta %v", k, m)
		}
		for _, p := range ps {
			if m.Get(p.Name) == "" {
				t.Errorf("%s: meta has no value for %s", k, p.Name)
			}
		}
	}
}

// TestPresets checks the published parameter counts.
func TestPresets(t *testing.T) {
	for name, want := range map[string]int64{
		"gpt2-small": 124_439_808, "gpt2-medium": 354_823_168, "gpt2-large": 774_030_080,
		"gpt2-xl": 1_557_611_200, "llama-7b": 6_738_415_616, "llama-13b": 13_015_864_320,
	} {
		p := &paramReader{kind: trainSpec, given: map[string]string{"model": name}, vals: map[string]string{}}
		m := readModel(p, "fp32", 1)
		if err := p.err(); err != nil {
			t.Fatal(err)
		}
		if got := m.nParams(); got != want {
			t.Errorf("%s: %d parameters, want %d", name, got, want)
		}
	}
	// An explicit parameter overrides the preset; gpt2's ffn follows d_model.
	r := mustNew(t, "transformer-train", 0, map[string]string{"model": "llama-7b", "layers": "2"})
	if m := r.Meta(); m.Get("layers") != "2" || m.Get("d_model") != "4096" || m.Get("ffn") != "11008" || m.Get("arch") != "llama" {
		t.Errorf("override: %v", m)
	}
	r.Close()
	r = mustNew(t, "transformer-train", 0, map[string]string{"d_model": "64", "heads": "4"})
	if m := r.Meta(); m.Get("ffn") != "256" {
		t.Errorf("gpt2 ffn default with d_model 64: %s, want 256", m.Get("ffn"))
	}
	r.Close()
}

// configs exercises every option at small sizes.
func configs() []struct {
	kind string
	p    map[string]string
} {
	type c = struct {
		kind string
		p    map[string]string
	}
	var cs []c
	for _, g := range goldens {
		cs = append(cs, c{g.kind, g.params})
	}
	tt := with(tinyLM, "batch", "2", "seq", "8", "steps", "3", "layers", "3")
	for _, arch := range []string{"gpt2", "llama"} {
		for _, dtype := range []string{"fp32", "bf16", "fp16"} {
			for _, ck := range []string{"none", "full"} {
				for _, att := range []string{"eager", "flash"} {
					for _, opt := range []string{"adam", "sgd"} {
						cs = append(cs, c{"transformer-train", with(tt, "arch", arch, "dtype", dtype, "checkpointing", ck, "attention", att, "optimizer", opt)})
					}
				}
			}
		}
	}
	sv := with(tinyLM, "layers", "2", "requests", "30", "prompt_min", "1", "prompt_max", "40", "output_min", "1", "output_max", "50", "max_batch", "5")
	for _, arch := range []string{"gpt2", "llama"} {
		for _, kv := range []string{"paged", "concat"} {
			for _, lam := range []string{"0.01", "0.3", "4", "100"} {
				cs = append(cs, c{"llm-serve", with(sv, "arch", arch, "kv", kv, "arrival", lam, "dtype", "fp32", "block_tokens", "3")})
			}
		}
	}
	for _, d := range []string{"resnet18", "resnet34", "resnet50"} {
		for _, dtype := range []string{"fp32", "bf16"} {
			cs = append(cs, c{"cnn-train", map[string]string{"depth": d, "dtype": dtype, "batch": "2", "image": "64", "steps": "2"}})
		}
	}
	cs = append(cs, c{"cnn-train", map[string]string{"depth": "resnet50", "image": "1", "batch": "1", "steps": "1"}})
	return cs
}

// TestCheckAndPersistent replays every configuration through traces.Check
// and checks that exactly the documented persistent buffers are live at
// the end, and that the phase marks are complete.
func TestCheckAndPersistent(t *testing.T) {
	for i, c := range configs() {
		r := mustNew(t, c.kind, uint64(i), c.p)
		m := r.Meta()
		name := fmt.Sprintf("%s %v", c.kind, c.p)
		s := replay(t, r, true, func(ev traces.Event, _ int64) {
			if ev.Stream != 0 || ev.Time != traces.NoTime {
				t.Fatalf("%s: %+v: want stream 0 and no time", name, ev)
			}
		})
		wantN, _ := strconv.Atoi(m.Get("persistent-buffers"))
		wantB, _ := strconv.ParseInt(m.Get("persistent-bytes"), 10, 64)
		if s.liveN != wantN || s.live != wantB {
			t.Errorf("%s: %d buffers, %d bytes live at the end; want %d, %d", name, s.liveN, s.live, wantN, wantB)
		}
		if s.allocs-s.frees != int64(s.liveN) {
			t.Errorf("%s: %d allocs, %d frees, %d live", name, s.allocs, s.frees, s.liveN)
		}
		switch c.kind {
		case "llm-serve":
			checkServeMarks(t, name, s.marks, m)
		default:
			steps, _ := strconv.Atoi(m.Get("steps"))
			var want []string
			for n := range steps {
				want = append(want, "step:"+strconv.Itoa(n), "forward", "backward", "optimizer")
			}
			if !slices.Equal(s.marks, want) {
				t.Errorf("%s: marks %v, want %v", name, s.marks, want)
			}
		}
	}
}

func checkServeMarks(t *testing.T, name string, marks []string, m traces.Meta) {
	t.Helper()
	reqs, _ := strconv.Atoi(m.Get("requests"))
	var nreq, ndec int
	for _, l := range marks {
		switch {
		case l == "prefill":
		case strings.HasPrefix(l, "request:"):
			if l != "request:"+strconv.Itoa(nreq) {
				t.Errorf("%s: mark %s, want request:%d", name, l, nreq)
			}
			nreq++
		case strings.HasPrefix(l, "decode:"):
			if l != "decode:"+strconv.Itoa(ndec) {
				t.Errorf("%s: mark %s, want decode:%d", name, l, ndec)
			}
			ndec++
		default:
			t.Errorf("%s: unexpected mark %q", name, l)
		}
	}
	if nreq != reqs {
		t.Errorf("%s: %d request marks, want %d", name, nreq, reqs)
	}
}

// TestPeakByHand checks transformer-train's live bytes against a hand
// computation: gpt2 architecture, 1 layer, D=8, H=2, F=32, V=16, C=4,
// batch B=2, seq S=4 (T=8 tokens), fp32 (e=4), Adam, eager attention.
func TestPeakByHand(t *testing.T) {
	p := with(tinyLM, "ctx", "4", "batch", "2", "seq", "4", "steps", "2")
	const (
		D, F, V, C, T, B, H, S, e = 8, 32, 16, 4, 8, 2, 2, 4, 4
		// Parameters: wte V·D + wpe C·D, per layer ln_1 2D, c_attn D·3D+3D,
		// attn c_proj D·D+D, ln_2 2D, c_fc D·F+F, mlp c_proj F·D+D, then
		// ln_f 2D: 128+32 + 872 + 16 = 1048 elements.
		numel  = V*D + C*D + 2*D + D*3*D + 3*D + D*D + D + 2*D + D*F + F + F*D + D + 2*D
		params = numel * e // 4192 bytes, 16 tensors
		adam   = 2 * numel * 4
		ids    = 2 * T * 8 // token ids and targets
		loss   = 4
		act    = T * D * e // 256
		stat   = T * 4     // 32
		qkv    = T * 3 * D * e
		score  = B * H * S * S * e // 256
		ffn    = T * F * e         // 1024
	)
	if numel != 1048 {
		t.Fatalf("numel %d", numel)
	}
	// Activations saved by the layer at the end of forward: its input x0,
	// n1, mean1, rstd1, qkv, probs, merged, x1, n2, mean2, rstd2, h, g.
	const saved = act + act + 2*stat + qkv + score + act + act + act + 2*stat + ffn + ffn // 4480
	// The backward peak is in the MLP's backward, right after the c_proj
	// weight and bias gradients: the parameters, ids, loss, the gradients
	// already made (wte V·D·e by the tied head, ln_f 2D·e), the saved
	// activations, the incoming gradient dOut (act), dg (ffn) and the
	// c_proj gradients (F·D·e + D·e).
	const actPeak = params + ids + loss + V*D*e + 2*D*e + saved + act + ffn + F*D*e + D*e
	if actPeak != 11716 {
		t.Fatalf("hand computation: %d", actPeak)
	}
	// The optimizer's peak: parameters, gradients (one per parameter),
	// Adam's moments and the foreach sqrt denominators, plus ids and loss.
	const optPeak = params + params + adam + numel*4 + ids + loss // 21092
	const persistent = params + adam                              // 12576

	// Peaks per step and phase.
	var step, phase string
	phasePeak := map[string]int64{}
	r := mustNew(t, "transformer-train", 0, p)
	s := replay(t, r, true, func(ev traces.Event, live int64) {
		if ev.Op == traces.OpMark {
			if strings.HasPrefix(ev.Label, "step:") {
				step = ev.Label
			} else {
				phase = ev.Label
			}
			return
		}
		k := step + " " + phase
		phasePeak[k] = max(phasePeak[k], live)
	})
	if s.peak != optPeak {
		t.Errorf("peak %d, want %d", s.peak, optPeak)
	}
	// Forward peaks in the head, while log_softmax runs: the saved
	// activations, the layer's output (act, saved by the final norm), the
	// final norm's output and statistics (act + 2·stat), and the fp32
	// logits and log-probabilities (T·V·4 each); the loss is not made yet.
	const fwdPeak = params + ids + saved + act + act + 2*stat + 2*T*V*4 // 10400
	for k, want := range map[string]int64{
		"step:0 forward":  fwdPeak,
		"step:0 backward": actPeak,
		// Step 1 runs with Adam's moments live.
		"step:1 forward":   fwdPeak + adam,
		"step:1 backward":  actPeak + adam,
		"step:0 optimizer": optPeak,
		"step:1 optimizer": optPeak,
	} {
		if got := phasePeak[k]; got != want {
			t.Errorf("%s: peak %d, want %d", k, got, want)
		}
	}
	if s.live != persistent || s.liveN != 3*16 {
		t.Errorf("end: %d bytes in %d buffers, want %d in 48", s.live, s.liveN, persistent)
	}
	// Before step:0 only the parameters are live.
	r = mustNew(t, "transformer-train", 0, p)
	var before int64
	for {
		ev, err := r.Next()
		if err != nil || ev.Op == traces.OpMark {
			break
		}
		before += ev.Size
	}
	r.Close()
	if before != params {
		t.Errorf("parameters: %d bytes, want %d", before, params)
	}
}

// TestServeBlocks counts paged KV blocks: 3 requests arriving together,
// prompts of 5 and outputs of 7 tokens, so each caches 5+7−1 = 11 tokens
// in ⌈11/4⌉ = 3 blocks of 4 tokens; a block holds K and V of both layers:
// 2·L·block_tokens·D·e = 2·2·4·8·4 = 512 bytes.
func TestServeBlocks(t *testing.T) {
	p := with(tinyLM, "vocab", "17", "layers", "2", "dtype", "fp32", "requests", "3", "arrival", "1000", "max_batch", "3", "block_tokens", "4",
		"prompt_min", "5", "prompt_max", "5", "output_min", "7", "output_max", "7")
	var blocks, live, maxLive int
	ids := map[uint64]bool{}
	var decodes int
	replay(t, mustNew(t, "llm-serve", 3, p), false, func(ev traces.Event, _ int64) {
		switch {
		case ev.Op == traces.OpAlloc && ev.Size == 512:
			blocks++
			live++
			maxLive = max(maxLive, live)
			ids[ev.ID] = true
		case ev.Op == traces.OpFree && ids[ev.ID]:
			live--
		case ev.Op == traces.OpMark && strings.HasPrefix(ev.Label, "decode:"):
			decodes++
		}
	})
	if blocks != 9 || maxLive != 9 || live != 0 {
		t.Errorf("%d blocks allocated, at most %d live, %d left; want 9, 9, 0", blocks, maxLive, live)
	}
	// Prefill gives the first token; 6 decode steps give the other 6.
	if decodes != 6 {
		t.Errorf("%d decode steps, want 6", decodes)
	}
}

// TestStreamingMemory generates 10^6 events of each kind and checks that
// the live heap does not grow and that allocations are rare (mark labels
// only).
func TestStreamingMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("slow")
	}
	const n = 1_000_000
	for _, c := range []struct {
		kind string
		p    map[string]string
	}{
		{"transformer-train", map[string]string{"layers": "2", "d_model": "64", "heads": "4", "vocab": "100", "batch": "2", "seq": "16", "steps": "1000000"}},
		{"llm-serve", map[string]string{"requests": "1000000", "layers": "2", "d_model": "64", "heads": "4", "vocab": "100"}},
		{"llm-serve", map[string]string{"requests": "1000000", "layers": "2", "d_model": "64", "heads": "4", "vocab": "100", "kv": "concat"}},
		{"cnn-train", map[string]string{"depth": "resnet18", "batch": "1", "image": "32", "steps": "1000000"}},
	} {
		r := mustNew(t, c.kind, 1, c.p)
		marks := 0
		read := func(k int) {
			for range k {
				ev, err := r.Next()
				if err != nil {
					t.Fatal(err)
				}
				if ev.Op == traces.OpMark {
					marks++
				}
			}
		}
		read(n / 10) // warm up: the model's bookkeeping reaches its size
		marks = 0
		var m0, m1 runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&m0)
		read(n)
		runtime.GC()
		runtime.ReadMemStats(&m1)
		r.Close()
		growth := int64(m1.HeapAlloc) - int64(m0.HeapAlloc)
		mallocs := m1.Mallocs - m0.Mallocs
		t.Logf("%s: heap growth %d bytes; %d mallocs (%d bytes) for %d events with %d marks", c.kind, growth, mallocs, m1.TotalAlloc-m0.TotalAlloc, n, marks)
		if growth > 256<<10 {
			t.Errorf("%s: live heap grew by %d bytes over %d events", c.kind, growth, n)
		}
		// The only per-event allocation is the string of a numbered mark
		// label ("decode:N"), which is garbage once read.
		if mallocs > uint64(marks)+1000 {
			t.Errorf("%s: %d heap allocations for %d events with %d marks", c.kind, mallocs, n, marks)
		}
	}
}

func TestClose(t *testing.T) {
	r := mustNew(t, "cnn-train", 0, map[string]string{"steps": "10"})
	for range 5000 {
		if _, err := r.Next(); err != nil {
			t.Fatal(err)
		}
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Next(); err != io.EOF {
		t.Fatalf("Next after Close: %v", err)
	}
	r.Close()
	// Drained to the end, then closed.
	r = mustNew(t, "transformer-train", 0, goldens[0].params)
	replay(t, r, false, nil)
	if _, err := r.Next(); err != io.EOF {
		t.Fatalf("Next after EOF: %v", err)
	}
	// Dropped without Close: the coroutine is stopped by the cleanup.
	before := runtime.NumGoroutine()
	for range 50 {
		r := mustNew(t, "cnn-train", 0, nil)
		r.Next()
	}
	for range 20 {
		runtime.GC()
		if runtime.NumGoroutine() <= before+5 {
			break
		}
	}
	if g := runtime.NumGoroutine(); g > before+5 {
		t.Errorf("%d goroutines after dropping 50 readers (was %d)", g, before)
	}
}

func TestParamErrors(t *testing.T) {
	for _, c := range []struct {
		kind string
		p    map[string]string
		want []string // substrings of the error
	}{
		{"gpt-train", nil, []string{`unknown kind "gpt-train"`, "cnn-train, llm-serve, transformer-train"}},
		{"transformer-train", map[string]string{"layer": "2", "bogus": "1"}, []string{`unknown parameter "bogus", "layer"`, "layers", "d_model", "checkpointing"}},
		{"transformer-train", map[string]string{"batch": "eight"}, []string{"parameter batch", `"eight" is not an integer`}},
		{"transformer-train", map[string]string{"batch": "0"}, []string{"parameter batch", "out of range"}},
		{"transformer-train", map[string]string{"seq": "-5"}, []string{"parameter seq", "out of range"}},
		{"transformer-train", map[string]string{"steps": "0"}, []string{"parameter steps"}},
		{"transformer-train", map[string]string{"dtype": "fp8"}, []string{"parameter dtype", `"fp8" is not one of bf16, fp16, fp32`}},
		{"transformer-train", map[string]string{"model": "gpt5"}, []string{"parameter model", "llama-7b"}},
		{"transformer-train", map[string]string{"heads": "5"}, []string{"5 does not divide d_model 768"}},
		{"transformer-train", map[string]string{"arch": "llama", "d_model": "6", "heads": "2"}, []string{"even head dimension"}},
		{"transformer-train", map[string]string{"ctx": "100"}, []string{"parameter ctx", "shorter than the longest sequence"}},
		{"transformer-train", map[string]string{"batch": "1000000", "seq": "1000000"}, []string{"traces.MaxSize"}},
		{"transformer-train", map[string]string{"layers": "1000000"}, []string{"parameter layers"}},
		{"transformer-train", map[string]string{"batch": "x", "seq": "0"}, []string{"parameter batch", "parameter seq"}},
		{"llm-serve", map[string]string{"arrival": "0"}, []string{"parameter arrival"}},
		{"llm-serve", map[string]string{"arrival": "NaN"}, []string{"parameter arrival", "not a finite number"}},
		{"llm-serve", map[string]string{"prompt_min": "100", "prompt_max": "10"}, []string{"prompt_max", "less than prompt_min"}},
		{"llm-serve", map[string]string{"output_min": "0"}, []string{"parameter output_min"}},
		{"llm-serve", map[string]string{"kv": "ring"}, []string{"parameter kv", "concat, paged"}},
		{"llm-serve", map[string]string{"kv": "concat", "prompt_max": "16000000", "heads": "768", "d_model": "768"}, []string{"score matrix", "traces.MaxSize"}},
		{"llm-serve", map[string]string{"block_tokens": "16000000", "model": "llama-13b", "layers": "10000"}, []string{"KV block", "traces.MaxSize"}},
		{"cnn-train", map[string]string{"depth": "resnet101"}, []string{"parameter depth", "resnet18, resnet34, resnet50"}},
		{"cnn-train", map[string]string{"image": "10000000", "batch": "1000"}, []string{"traces.MaxSize"}},
		{"cnn-train", map[string]string{"lr": "0.1"}, []string{`unknown parameter "lr"`, "batch, channels, classes, depth, dtype, image, steps"}},
	} {
		_, err := New(c.kind, 0, c.p)
		if err == nil {
			t.Errorf("%s %v: no error", c.kind, c.p)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s %v: error %q does not mention %q", c.kind, c.p, err, w)
			}
		}
	}
	if _, err := New("cnn-train", 0, map[string]string{"batch": " 4 "}); err != nil {
		t.Errorf("blanks around a value: %v", err)
	}
	var pe *traces.PosError
	_, err := New("cnn-train", 0, map[string]string{"batch": "x"})
	if errors.As(err, &pe) {
		t.Error("a parameter error is not a position error")
	}
}

// BenchmarkGenerate reports events per second for each kind at realistic
// sizes.
func BenchmarkGenerate(b *testing.B) {
	for _, c := range []struct {
		name, kind string
		p          map[string]string
	}{
		{"transformer-train/gpt2-small", "transformer-train", map[string]string{"steps": "1000000"}},
		{"transformer-train/llama-7b-mixed-ckpt", "transformer-train", map[string]string{"model": "llama-7b", "dtype": "bf16", "checkpointing": "full", "seq": "4096", "steps": "1000000"}},
		{"llm-serve/llama-7b-paged", "llm-serve", map[string]string{"model": "llama-7b", "requests": "1000000"}},
		{"llm-serve/llama-7b-concat", "llm-serve", map[string]string{"model": "llama-7b", "requests": "1000000", "kv": "concat"}},
		{"cnn-train/resnet50", "cnn-train", map[string]string{"steps": "1000000"}},
	} {
		b.Run(c.name, func(b *testing.B) {
			r := mustNew(b, c.kind, 1, c.p)
			defer r.Close()
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				if _, err := r.Next(); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "events/s")
		})
	}
}

// TestRecordedPeaks compares the peak live bytes of generated traces with
// the recorded traces of the same workloads in the embedded corpus
// (PyTorch 1.13 on CPU; see traces/corpus/data/README.md). The generators
// leave out the framework's small bookkeeping allocations, so only the
// peak is compared, within 20%.
func TestRecordedPeaks(t *testing.T) {
	gpt := map[string]string{"layers": "6", "d_model": "512", "heads": "8", "vocab": "8192", "ctx": "256"}
	for _, c := range []struct {
		recorded, kind string
		p              map[string]string
	}{
		{"resnet50-train", "cnn-train", map[string]string{"depth": "resnet50", "batch": "8", "steps": "3"}},
		{"gpt-train", "transformer-train", with(gpt, "batch", "4", "seq", "256", "steps", "3")},
		{"gpt-generate", "llm-serve", with(gpt, "dtype", "fp32", "kv", "concat", "requests", "4", "arrival", "1000", "max_batch", "4",
			"prompt_min", "64", "prompt_max", "64", "output_min", "193", "output_max", "193")},
	} {
		rec, err := corpus.Open(c.recorded)
		if err != nil {
			t.Fatal(err)
		}
		want := replay(t, rec, false, nil)
		got := replay(t, mustNew(t, c.kind, 1, c.p), false, nil)
		ratio := float64(got.peak) / float64(want.peak)
		t.Logf("%s: generated peak %d B in %d allocs, recorded %d B in %d allocs (ratio %.3f)", c.recorded, got.peak, got.allocs, want.peak, want.allocs, ratio)
		if ratio < 0.8 || ratio > 1.2 {
			t.Errorf("%s: generated peak %d is %.2f× the recorded %d", c.recorded, got.peak, ratio, want.peak)
		}
	}
}
