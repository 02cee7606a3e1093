package harness

import (
	"bytes"
	"errors"
	"strings"
	"sync"
	"testing"

	"membench/strategies"
	"membench/traces"
	"membench/traces/corpus"
)

// TestTorchOnTPUIsRefused: the torch house refuses a TPU device when its
// allocator is built, saying why (PyTorch/XLA), as an
// UnsupportedDeviceError the harness can recognise.
func TestTorchOnTPUIsRefused(t *testing.T) {
	for _, spec := range []string{"torch", "torch:expandable_segments=true"} {
		for _, dev := range []string{"tpu-v5e", "tpu"} {
			d := device(t, dev)
			_, _, err := NewAllocator(spec, strategies.NewMemory(&d))
			var u *strategies.UnsupportedDeviceError
			if !errors.As(err, &u) || !strings.Contains(err.Error(), "PyTorch/XLA") || !strings.Contains(err.Error(), "jax or tf") {
				t.Errorf("%s on %s: error %v, want an UnsupportedDeviceError naming PyTorch/XLA and the alternatives", spec, dev, err)
			}
			if _, err := Replay("x", &traces.SliceReader{}, spec, d, DefaultOptions); err == nil {
				t.Errorf("Replay of %s on %s ran", spec, dev)
			}
		}
	}
}

// TestPlan: default strategies on a TPU leave torch out (reported in
// skipped); a named strategy left with no device, or a named device left
// with no strategy, is an error; a GPU and TPU matrix keeps what is
// modelled; each job carries its allocator's notes.
func TestPlan(t *testing.T) {
	src := []*Source{{Name: "a"}, {Name: "b"}}
	gpu, tpu := device(t, "a100-80g"), device(t, "tpu-v5e")
	specsOf := func(jobs []Job) string {
		var s []string
		for _, j := range jobs {
			s = append(s, j.Source.Name+"/"+j.Device.Name+"/"+j.Spec)
		}
		return strings.Join(s, " ")
	}
	jobs, skipped, err := Plan(src, []strategies.Device{gpu, tpu}, DefaultStrategies(), false, false)
	if err != nil {
		t.Fatal(err)
	}
	want := "a/a100-80g/jax a/a100-80g/tf a/a100-80g/torch a/tpu-v5e/jax a/tpu-v5e/tf b/a100-80g/jax b/a100-80g/tf b/a100-80g/torch b/tpu-v5e/jax b/tpu-v5e/tf"
	if got := specsOf(jobs); got != want {
		t.Errorf("jobs %s\nwant %s", got, want)
	}
	for i, j := range jobs {
		if j.Index != i {
			t.Errorf("job %d has index %d", i, j.Index)
		}
	}
	if len(skipped) != 1 || !strings.Contains(skipped[0].Error(), "torch on tpu-v5e is not modelled") {
		t.Errorf("skipped %v, want torch on tpu-v5e once", skipped)
	}
	// Two specs of torch are one strategy on the TPU: said once, not
	// twice in the same words.
	if _, skipped, err = Plan(src, []strategies.Device{gpu, tpu}, []string{"torch", "torch:expandable_segments=true", "jax"}, true, true); err != nil || len(skipped) != 1 {
		t.Errorf("skipped %v (%v), want torch on tpu-v5e once", skipped, err)
	}

	for _, c := range []struct {
		devs          []strategies.Device
		specs         []string
		named, namedD bool
		want          string // error, or the jobs of source a
	}{
		{[]strategies.Device{tpu}, []string{"torch"}, true, true, "error: torch on tpu-v5e is not modelled"},
		{[]strategies.Device{tpu}, []string{"torch", "jax"}, true, true, "error: torch on tpu-v5e"},
		{[]strategies.Device{tpu}, []string{"torch"}, true, false, "error: torch on tpu-v5e"},
		{[]strategies.Device{gpu, tpu}, []string{"torch"}, true, true, "error: torch on tpu-v5e"},
		{[]strategies.Device{gpu, tpu}, []string{"torch"}, true, false, "a/a100-80g/torch"},
		{[]strategies.Device{gpu, tpu}, []string{"jax", "torch"}, true, true, "a/a100-80g/jax a/a100-80g/torch a/tpu-v5e/jax"},
		{[]strategies.Device{tpu}, []string{"jax", "torch:max_split_size_mb=1"}, true, true, "error: torch: max_split_size_mb=1"},
	} {
		jobs, _, err := Plan(src[:1], c.devs, c.specs, c.named, c.namedD)
		got := specsOf(jobs)
		if err != nil {
			got = "error: " + err.Error()
		}
		if !strings.HasPrefix(got, c.want) {
			t.Errorf("Plan(%v, named %t/%t): %s, want %s", c.specs, c.named, c.namedD, got, c.want)
		}
	}

	jobs, _, err = Plan(src[:1], []strategies.Device{tpu, gpu}, []string{"tf:allow_growth=true", "torch:garbage_collection_threshold=0.5"}, true, true)
	if err != nil {
		t.Fatal(err)
	}
	notes := map[string]string{}
	for _, j := range jobs {
		notes[j.Device.Name+"/"+j.Spec] = strings.Join(j.Notes, "|")
	}
	for key, want := range map[string]string{
		"tpu-v5e/tf:allow_growth=true":                    "allow_growth=true has no effect on a TPU device",
		"a100-80g/tf:allow_growth=true":                   "",
		"a100-80g/torch:garbage_collection_threshold=0.5": "garbage_collection_threshold=0.5 has no effect without per_process_memory_fraction",
	} {
		if got := notes[key]; (want == "") != (got == "") || !strings.Contains(got, want) {
			t.Errorf("%s: notes %q, want %q", key, got, want)
		}
	}
}

// TestStdinSource: standard input streams once; spooled, it replays as
// often as needed, concurrently, with the same events; Cache spools it
// first.
func TestStdinSource(t *testing.T) {
	r, err := corpus.Open("gpt-generate")
	if err != nil {
		t.Fatal(err)
	}
	var text bytes.Buffer
	if _, err := traces.WriteNative(&text, r, traces.WriterOptions{}); err != nil {
		t.Fatal(err)
	}
	r.Close()
	count := func(s *Source) (int, error) {
		r, err := s.Open()
		if err != nil {
			return 0, err
		}
		defer r.Close()
		n := 0
		for {
			if _, err := r.Next(); err != nil {
				return n, nil
			}
			n++
		}
	}

	once := StdinSource(bytes.NewReader(text.Bytes()))
	n, err := count(once)
	if err != nil || n == 0 {
		t.Fatalf("streamed: %d events, %v", n, err)
	}
	if _, err := once.Open(); err == nil {
		t.Error("standard input opened twice without a spool")
	}

	s := StdinSource(bytes.NewReader(text.Bytes()))
	if err := s.Spool(); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	got := make([]int, 4)
	for i := range got {
		wg.Add(1)
		go func() {
			defer wg.Done()
			got[i], _ = count(s)
		}()
	}
	wg.Wait()
	for i, g := range got {
		if g != n {
			t.Errorf("spooled replay %d: %d events, want %d", i, g, n)
		}
	}
	if err := s.Close(); err != nil {
		t.Error(err)
	}
	if _, err := s.Open(); err == nil {
		t.Error("opened after Close")
	}

	c := StdinSource(bytes.NewReader(text.Bytes()))
	defer c.Close()
	c.Cache(DefaultCacheEvents)
	for i := 0; i < 2; i++ {
		if g, err := count(c); g != n || err != nil {
			t.Errorf("cached replay %d: %d events, %v", i, g, err)
		}
	}
}
