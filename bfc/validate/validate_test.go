package validate_test

import (
	"bytes"
	"errors"
	"os"
	"strings"
	"testing"

	"membench/bfc/validate"
	"membench/internal/sharedtraces"
	"membench/strategies"
	"membench/xprof"
)

// op is one recorded event of a hand-written window: an allocation of req
// bytes handed chunk bytes at addr, or (req 0) the free of the chunk at
// addr.
type op struct {
	req, chunk int64
	addr       uint64
}

func alloc(req, chunk int64, addr uint64) op { return op{req, chunk, addr} }
func free(chunk int64, addr uint64) op       { return op{0, chunk, addr} }

// window turns ops into an allocator's records, with bytes in use after
// each event starting from inUse0, as TSL records them.
func window(inUse0 int64, ops ...op) *xprof.Allocator {
	a := &xprof.Allocator{Name: "GPU_0_bfc", Device: 0}
	in := inUse0
	for i, o := range ops {
		r := xprof.Record{Time: int64(i), Alloc: o.req > 0, Requested: o.req, Chunk: o.chunk, Addr: o.addr,
			Has: xprof.HasRequested | xprof.HasChunk | xprof.HasAddr | xprof.HasInUse}
		if r.Alloc {
			in += o.chunk
		} else {
			r.Requested = o.chunk
			in -= o.chunk
		}
		r.InUse = in
		a.Records = append(a.Records, r)
	}
	return a
}

// The cases lay chunks out from address 0x1000. The first allocation in
// a gap is undetermined, but teaches that nothing free lay below it;
// chunks between live neighbours are then fully known.
const b0 = 0x1000

func TestDecisions(t *testing.T) {
	// setup: A [0,512) B [512,768) C [768,1792) D [1792,2048) E [2048,2304),
	// each placed in unseen memory (5 undetermined), then A and C freed:
	// free chunks of 512 and 1024 between live ones.
	setup := []op{
		alloc(512, 512, b0), alloc(256, 256, b0+512), alloc(1024, 1024, b0+768),
		alloc(256, 256, b0+1792), alloc(256, 256, b0+2048),
		free(512, b0), free(1024, b0+768),
	}
	with := func(ops ...op) []op { return append(append([]op{}, setup...), ops...) }
	cases := []struct {
		name                string
		ops                 []op
		agree, disagree     int
		undetermined        map[string]int
		firstModel, firstCh int64 // the model's choice at the first divergence
	}{
		{"best fit takes the exact 512 chunk", with(alloc(300, 512, b0)), 1, 0, map[string]int{validate.WhyUnseen: 5}, 0, 0},
		{"first fit would take the 1024 chunk: wrong", with(alloc(300, 512, b0+768)), 0, 1, map[string]int{validate.WhyUnseen: 5}, 0, 512},
		{"a chunk of twice the request is split", with(alloc(1, 256, b0)), 1, 0, map[string]int{validate.WhyUnseen: 5}, 0, 0},
		{"handing out the whole chunk instead of splitting: wrong", with(alloc(1, 512, b0)), 0, 1, map[string]int{validate.WhyUnseen: 5}, 0, 256},
		{"under twice the request, the whole chunk is handed out", with(alloc(600, 1024, b0+768)), 1, 0, map[string]int{validate.WhyUnseen: 5}, 0, 0},
		{"splitting below twice the request: wrong", with(alloc(600, 768, b0+768)), 0, 1, map[string]int{validate.WhyUnseen: 5}, 768, 1024},
		{"the allocation keeps the low end", with(alloc(600, 768, b0+768+256)), 0, 1, map[string]int{validate.WhyUnseen: 5}, 768, 1024},
		{"freed neighbours coalesce inside a region", []op{
			alloc(768, 768, b0), free(768, b0), // proves [0,768) is one region
			alloc(256, 256, b0), alloc(256, 256, b0+256), alloc(256, 256, b0+512),
			free(256, b0), free(256, b0+256), alloc(512, 512, b0)}, 3, 0, map[string]int{validate.WhyUnseen: 1, validate.WhySize: 1}, 0, 0},
		{"without proof of one region, adjacent free chunks stay apart", []op{
			alloc(256, 256, b0), alloc(256, 256, b0+256), alloc(256, 256, b0+512),
			free(256, b0), free(256, b0+256), alloc(200, 256, b0)}, 0, 0, map[string]int{validate.WhyUnseen: 3, validate.WhySize: 1}, 0, 0},
		{"a chunk at the top of known memory may be larger", []op{
			alloc(256, 256, b0), alloc(256, 256, b0+256), free(256, b0+256), alloc(256, 256, b0+256)},
			0, 0, map[string]int{validate.WhyUnseen: 2, validate.WhySize: 1}, 0, 0},
		{"a chunk allocated before the window may start lower once freed", []op{
			alloc(256, 256, b0+512), free(256, b0+256), alloc(256, 256, b0+256)},
			0, 0, map[string]int{validate.WhyUnseen: 1, validate.WhyStart: 1}, 0, 0},
		{"a smaller chunk beside unseen memory might fit better", []op{
			alloc(1024, 1024, b0), alloc(256, 256, b0+1024), free(256, b0+2048), free(1024, b0), alloc(512, 512, b0)},
			0, 0, map[string]int{validate.WhyUnseen: 2, validate.WhyRival: 1}, 0, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rep, err := validate.Allocator(window(1<<20, tc.ops...), validate.Options{})
			if err != nil {
				t.Fatal(err)
			}
			if rep.Agree != tc.agree || rep.Disagree != tc.disagree {
				t.Errorf("agree %d, disagree %d; want %d, %d", rep.Agree, rep.Disagree, tc.agree, tc.disagree)
			}
			for why, n := range tc.undetermined {
				if rep.Undetermined[why] != n {
					t.Errorf("undetermined %q: %d, want %d (all: %v)", why, rep.Undetermined[why], n, rep.Undetermined)
				}
			}
			if got := rep.Allocs - rep.Determined(); got != sum(tc.undetermined) {
				t.Errorf("%d undetermined, want %d (%v)", got, sum(tc.undetermined), rep.Undetermined)
			}
			if tc.disagree > 0 && (rep.First == nil || rep.First.ModelOffset != tc.firstModel+b0-b0 || rep.First.ModelCh != tc.firstCh) {
				t.Errorf("first divergence %+v, want the model at offset %d with %d bytes", rep.First, tc.firstModel, tc.firstCh)
			}
			if rep.OK() != (tc.disagree == 0) {
				t.Errorf("OK() = %v", rep.OK())
			}
		})
	}
}

func sum(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

func TestInUse(t *testing.T) {
	a := window(0, alloc(100, 256, b0), alloc(100, 256, b0+256))
	a.Records[1].InUse += 100 // as if the allocator counted the request, not the chunk
	rep, err := validate.Allocator(a, validate.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if rep.InUseWrong != 1 || rep.FirstInUse != 1 || rep.OK() {
		t.Errorf("in use: %d wrong, first %d, OK %v", rep.InUseWrong, rep.FirstInUse, rep.OK())
	}
}

// TestContradictions: a recording that contradicts itself has lost
// events; that is reported, not blamed on the model, and the recording is
// trusted from there on.
func TestContradictions(t *testing.T) {
	for name, ops := range map[string][]op{
		"allocation over a live chunk": {alloc(256, 256, b0), alloc(256, 256, b0+128)},
		"free of a different size":     {alloc(256, 256, b0), free(512, b0)},
		"free inside a live chunk":     {alloc(512, 512, b0), free(256, b0+256)},
	} {
		rep, err := validate.Allocator(window(0, ops...), validate.Options{})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		var out bytes.Buffer
		rep.Write(&out, "f")
		if rep.Gaps == 0 || !strings.Contains(out.String(), "recording incomplete: ") {
			t.Errorf("%s: %d gaps, first %q\n%s", name, rep.Gaps, rep.FirstGap, out.String())
		}
	}
	a := window(0, alloc(256, 256, b0))
	a.Records[0].Has &^= xprof.HasChunk
	if _, err := validate.Allocator(a, validate.Options{}); err == nil || !strings.Contains(err.Error(), "event 0") {
		t.Errorf("missing allocation_bytes: %v", err)
	}
}

// TestRealProfiles validates every BFC allocator of every public profile:
// no determined decision disagrees and bytes in use agree everywhere. The
// check can fail on real data: with a split rule that always splits
// (max_internal_fragmentation_bytes of 256), TensorFlow's GPU_4_bfc
// disagrees.
func TestRealProfiles(t *testing.T) {
	files := []string{"tf-v100x8-bert-multiworker.xplane.pb", "jax-mi300x-conv-minimal-08.xplane.pb",
		"jax-mi300x-conv-minimal-legacy.xplane.pb", "jax-mi355-te-fused-attn.xplane.pb"}
	determined := map[string]int{}
	for _, f := range files {
		path := sharedtraces.Path(t, "profiler/"+f)
		fh, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		p, err := xprof.Read(fh, xprof.DefaultLimits)
		fh.Close()
		if err != nil {
			t.Fatal(err)
		}
		for _, a := range p.Allocators {
			rep, err := validate.Allocator(a, validate.Options{})
			if err != nil {
				t.Fatalf("%s %s: %v", f, a.Name, err)
			}
			if !rep.OK() {
				var b bytes.Buffer
				rep.Write(&b, f)
				t.Errorf("%s", b.String())
			}
			determined[f+" "+a.Name] = rep.Determined()
		}
		if f == files[0] {
			rep, _ := validate.Allocator(p.Find("GPU_4_bfc"), validate.Options{MaxFrag: 256})
			if rep.Disagree == 0 {
				t.Errorf("an always-splitting BFC agrees with GPU_4_bfc: the check cannot fail")
			}
		}
	}
	for key, min := range map[string]int{
		"tf-v100x8-bert-multiworker.xplane.pb GPU_4_bfc":    200,
		"tf-v100x8-bert-multiworker.xplane.pb GPU_6_bfc":    100,
		"tf-v100x8-bert-multiworker.xplane.pb gpu_host_bfc": 40,
	} {
		if determined[key] < min {
			t.Errorf("%s: %d determined decisions, want at least %d", key, determined[key], min)
		}
	}
}

func TestProfilesValidator(t *testing.T) {
	path := sharedtraces.Path(t, "profiler/xprof-tpu-v6e-inference.xplane.pb")
	fh, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	var out bytes.Buffer
	if _, err := validate.Profiles.Validate(path, fh, strategies.ValidateOptions{}, &out); !errors.Is(err, strategies.ErrNothingToValidate) {
		t.Errorf("TPU-only profile through the BFC validator: %v", err)
	}
	tf := sharedtraces.Path(t, "profiler/tf-v100x8-bert-multiworker.xplane.pb")
	fh2, _ := os.Open(tf)
	defer fh2.Close()
	n, err := validate.Profiles.Validate(tf, fh2, strategies.ValidateOptions{Allocators: []string{"GPU_4_bfc"}}, &out)
	if err != nil || n != 0 || !strings.Contains(out.String(), "GPU_4_bfc") || strings.Contains(out.String(), "GPU_6_bfc") {
		t.Errorf("one allocator: %d, %v\n%s", n, err, out.String())
	}
	fh3, _ := os.Open(tf)
	defer fh3.Close()
	if _, err := validate.Profiles.Validate(tf, fh3, strategies.ValidateOptions{Allocators: []string{"GPU_9_bfc"}}, &out); err == nil || !strings.Contains(err.Error(), "GPU_4_bfc") {
		t.Errorf("unknown allocator: %v", err)
	}
}

func TestIsBFC(t *testing.T) {
	for name, want := range map[string]bool{"GPU_0_bfc": true, "gpu_host_bfc": true, "cuda_host_bfc": true, "cpu": false, "TPU:0": false, "gpu_async_0": false} {
		if validate.IsBFC(name) != want {
			t.Errorf("IsBFC(%q) = %v", name, !want)
		}
	}
}
