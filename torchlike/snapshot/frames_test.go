package snapshot_test

import (
	"bytes"
	"fmt"
	"os"
	"testing"

	"membench/internal/pickle"
	"membench/internal/sharedtraces"
	"membench/torchlike"
	"membench/torchlike/snapshot"
	"membench/torchlike/snapshot/snaptest"
)

// The streaming decoder classifies frames it never builds; decoding the
// same pickle into values and reading every frame must give the same
// classes, entry by entry, on every shared recording (all of them carry
// frames: C++ and Python ones in the cs336, liger and torch.compile
// recordings, Python-only ones in opt125m).
func TestFrameClassesShared(t *testing.T) {
	for _, tc := range []struct {
		name string
		// class of every segment_alloc: malloc's C++ frame, or a
		// Python-only stack that names no allocator function
		segAlloc snapshot.FrameClass
	}{
		{"cs336-lm-peak-probe.pickle", snapshot.FramesMalloc},
		{"cs336-gpt2medium-ctx128-infer-warm.pickle", snapshot.FramesMalloc},
		{"cs336-gpt2medium-ctx256-train-warm.pickle", snapshot.FramesMalloc},
		{"liger-cross-entropy.pickle", snapshot.FramesMalloc},
		{"torch-compile-cross-entropy.pickle", snapshot.FramesMalloc},
		{"opt125m-zo-finetune.pickle", snapshot.FramesOther},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data, err := os.ReadFile(sharedtraces.Path(t, "pytorch-snapshots/"+tc.name))
			if err != nil {
				t.Fatal(err)
			}
			fast, err := snapshot.DecodePickle(bytes.NewReader(data))
			if err != nil {
				t.Fatal(err)
			}
			v, err := pickle.Decode(bytes.NewReader(data))
			if err != nil {
				t.Fatal(err)
			}
			slow, err := snapshot.FromValue(v)
			if err != nil {
				t.Fatal(err)
			}
			counts := map[string]int{}
			for d, tr := range fast.DeviceTraces {
				for i, e := range tr {
					if want := slow.DeviceTraces[d][i].Frames; e.Frames != want {
						t.Fatalf("device %d entry %d (%s): streaming class %v, built frames say %v", d, i, e.Action, e.Frames, want)
					}
					if e.Frames == snapshot.FramesNone {
						t.Errorf("entry %d (%s) has frames in the file but none decoded", i, e.Action)
					}
					if e.Action == torchlike.ActionSegmentAlloc && e.Frames != tc.segAlloc {
						t.Errorf("segment_alloc at entry %d: class %v, want %v", i, e.Frames, tc.segAlloc)
					}
					counts[fmt.Sprintf("%s/%v", e.Action, e.Frames)]++
				}
			}
			t.Logf("%v", counts)
		})
	}
}

// Generated snapshots with every class, frames shared between entries as
// PyTorch shares them (whole lists, and new lists of frames seen before),
// decode to the classes they were written with, from the pickle and from
// its JSON form.
func TestFrameClassesGenerated(t *testing.T) {
	classes := []snapshot.FrameClass{snapshot.FramesNone, snapshot.FramesOther, snapshot.FramesEmptyCache, snapshot.FramesMalloc}
	var tr []snapshot.TraceEntry
	for i := range 40 {
		c := classes[(i*7/3)%len(classes)]
		tr = append(tr, snapshot.TraceEntry{Action: torchlike.ActionSegmentAlloc, Addr: int64(i+1) << 30, Size: 2 << 20, Frames: c})
	}
	s := &snapshot.Snapshot{DeviceTraces: [][]snapshot.TraceEntry{tr}}
	var buf bytes.Buffer
	if err := snaptest.EncodePickle(&buf, s); err != nil {
		t.Fatal(err)
	}
	got, err := snapshot.Decode(bytes.NewReader(buf.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	v, err := pickle.Decode(bytes.NewReader(buf.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	var js bytes.Buffer
	snapshot.WriteJSON(&js, v)
	gotJSON, err := snapshot.Decode(&js)
	if err != nil {
		t.Fatal(err)
	}
	for i, e := range tr {
		if g := got.DeviceTraces[0][i].Frames; g != e.Frames {
			t.Errorf("pickle entry %d: %v, want %v", i, g, e.Frames)
		}
		if g := gotJSON.DeviceTraces[0][i].Frames; g != e.Frames {
			t.Errorf("JSON entry %d: %v, want %v", i, g, e.Frames)
		}
	}
}

func TestFrameTag(t *testing.T) {
	for _, tc := range []struct {
		s    string
		want snapshot.FrameClass
	}{
		{"empty_cache", snapshot.FramesEmptyCache},
		{"test_empty_cache.py", snapshot.FramesOther}, // a file name, not the function
		{"my_empty_cache", snapshot.FramesOther},
		{"c10::cuda::CUDACachingAllocator::Native::DeviceCachingAllocator::emptyCache(c10::cuda::MempoolId_t)", snapshot.FramesEmptyCache},
		{"c10::cuda::CUDACachingAllocator::Native::DeviceCachingAllocator::malloc(signed char, unsigned long, CUstream_st*)", snapshot.FramesMalloc},
		{"c10::cuda::CUDACachingAllocator::Native::NativeCachingAllocator::malloc(void**, signed char, unsigned long, CUstream_st*)", snapshot.FramesOther},
		{"forward", snapshot.FramesOther},
	} {
		f := pickle.NewDict()
		f.Set("filename", "x.py")
		f.Set("line", int64(1))
		f.Set("name", tc.s)
		e := pickle.NewDict()
		e.Set("action", "segment_free")
		e.Set("frames", &pickle.List{Items: []any{f}})
		top := pickle.NewDict()
		top.Set("device_traces", &pickle.List{Items: []any{&pickle.List{Items: []any{e}}}})
		s, err := snapshot.FromValue(top)
		if err != nil {
			t.Fatal(err)
		}
		if got := s.DeviceTraces[0][0].Frames; got != tc.want {
			t.Errorf("%q: %v, want %v", tc.s, got, tc.want)
		}
	}
}
