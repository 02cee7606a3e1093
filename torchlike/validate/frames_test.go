package validate_test

import (
	"bytes"
	"strings"
	"testing"

	"membench/torchlike/snapshot"
	"membench/torchlike/snapshot/snaptest"
	"membench/torchlike/validate"
)

// A burst of segment releases is read from its stack frames when it has
// them (issue 13): frames in DeviceCachingAllocator::malloc are a device
// malloc that failed and succeeded on the retry after the release, and
// give a capacity bound; frames in emptyCache are torch.cuda.empty_cache().
// Without frames, or with malloc frames in a recording whose frees carry
// none (the frames may then be the released segment's allocation's), the
// burst is inferred as before. Every snapshot goes through the pickle
// writer and the streaming decoder, so the classes are the decoder's.
func TestValidateBurstFrames(t *testing.T) {
	const MiB = 1 << 20
	A, B, D := int64(1<<40), int64(1<<40+512*MiB), int64(1<<40+1024*MiB)
	type burst struct {
		name       string
		release    snapshot.FrameClass // frames of the segment_free
		freeFrames bool                // the frees carry frames (context="all")
		capacity   int64               // --capacity; 0: unlimited
		// want
		framesRead, emptyCache, inferred, overruled int
		bound                                       int64 // tightest capacity bound, 0: none
	}
	// A 300 MiB segment is cached when a 400 MiB request comes: the
	// device malloc fails with 300 MiB reserved, the cache is released
	// and the retry succeeds; or the program emptied the cache first.
	retry := []burst{
		{name: "malloc frames, capacity known", release: snapshot.FramesMalloc, freeFrames: true, capacity: 500 * MiB,
			framesRead: 1, bound: 700 * MiB},
		{name: "malloc frames, capacity unknown", release: snapshot.FramesMalloc, freeFrames: true,
			framesRead: 1, inferred: 1, bound: 700 * MiB},
		{name: "python frames only", release: snapshot.FramesOther, freeFrames: true, capacity: 500 * MiB,
			framesRead: 1, bound: 700 * MiB},
		{name: "empty_cache frames", release: snapshot.FramesEmptyCache, freeFrames: true, capacity: 500 * MiB,
			framesRead: 1, emptyCache: 1},
		{name: "empty_cache frames, frees without frames", release: snapshot.FramesEmptyCache, capacity: 500 * MiB,
			framesRead: 1, emptyCache: 1},
		{name: "no frames: inferred", capacity: 500 * MiB},
		{name: "no frames, capacity unknown: inferred as empty_cache", emptyCache: 1},
		{name: "malloc frames, frees without frames: inferred", release: snapshot.FramesMalloc, capacity: 500 * MiB},
	}
	for _, tc := range retry {
		t.Run("retry/"+tc.name, func(t *testing.T) {
			fr := func(c snapshot.FrameClass) snapshot.FrameClass {
				if !tc.freeFrames {
					return snapshot.FramesNone
				}
				return c
			}
			e := func(act string, addr, size int64, f snapshot.FrameClass) snapshot.TraceEntry {
				return snapshot.TraceEntry{Action: act, Addr: addr, Size: size, Frames: f}
			}
			tr := []snapshot.TraceEntry{
				e("segment_alloc", A, 300*MiB, fr(snapshot.FramesMalloc)), e("alloc", A, 300*MiB, fr(snapshot.FramesMalloc)),
				e("free_requested", A, 300*MiB, fr(snapshot.FramesOther)), e("free_completed", A, 300*MiB, fr(snapshot.FramesOther)),
				e("segment_free", A, 300*MiB, tc.release),
				e("segment_alloc", B, 400*MiB, fr(snapshot.FramesMalloc)), e("alloc", B, 400*MiB, fr(snapshot.FramesMalloc)),
			}
			final := []snapshot.Segment{{Address: B, TotalSize: 400 * MiB, SegmentType: "large",
				Blocks: []snapshot.Block{{Address: B, Size: 400 * MiB, RequestedSize: 400 * MiB, State: "active_allocated"}}}}
			checkBurst(t, tr, final, tc.capacity, tc.framesRead, tc.emptyCache, tc.inferred, tc.overruled, tc.bound)
		})
	}
	// A cached 300 MiB segment is released, and the next allocation is
	// served from a segment that has room: no device malloc was needed,
	// so malloc frames cannot be right (they are overruled) and the
	// burst is empty_cache().
	for _, tc := range []burst{
		{name: "malloc frames overruled", release: snapshot.FramesMalloc, freeFrames: true, overruled: 1, emptyCache: 1},
		{name: "empty_cache frames", release: snapshot.FramesEmptyCache, freeFrames: true, framesRead: 1, emptyCache: 1},
	} {
		t.Run("no-retry/"+tc.name, func(t *testing.T) {
			o := snapshot.FramesOther
			e := func(act string, addr, size int64, f snapshot.FrameClass) snapshot.TraceEntry {
				return snapshot.TraceEntry{Action: act, Addr: addr, Size: size, Frames: f}
			}
			tr := []snapshot.TraceEntry{
				e("segment_alloc", A, 300*MiB, o), e("alloc", A, 300*MiB, o),
				e("segment_alloc", D, 20*MiB, o), e("alloc", D, 2*MiB, o),
				e("free_requested", A, 300*MiB, o), e("free_completed", A, 300*MiB, o),
				e("segment_free", A, 300*MiB, tc.release),
				e("alloc", D+2*MiB, 2*MiB, o),
			}
			final := []snapshot.Segment{{Address: D, TotalSize: 20 * MiB, SegmentType: "large",
				Blocks: []snapshot.Block{
					{Address: D, Size: 2 * MiB, RequestedSize: 2 * MiB, State: "active_allocated"},
					{Address: D + 2*MiB, Size: 2 * MiB, RequestedSize: 2 * MiB, State: "active_allocated"},
					{Address: D + 4*MiB, Size: 16 * MiB, State: "inactive"},
				}}}
			checkBurst(t, tr, final, tc.capacity, tc.framesRead, tc.emptyCache, tc.inferred, tc.overruled, tc.bound)
		})
	}
}

func checkBurst(t *testing.T, tr []snapshot.TraceEntry, final []snapshot.Segment, capacity int64, framesRead, emptyCache, inferred, overruled int, bound int64) {
	t.Helper()
	var buf bytes.Buffer
	if err := snaptest.EncodePickle(&buf, &snapshot.Snapshot{Segments: final, DeviceTraces: [][]snapshot.TraceEntry{tr}, Settings: &snapshot.Settings{MaxSplitSize: -1}}); err != nil {
		t.Fatal(err)
	}
	snap, err := snapshot.Decode(&buf)
	if err != nil {
		t.Fatal(err)
	}
	reps, err := validate.Validate(snap, validate.Options{Capacity: capacity})
	if err != nil {
		t.Fatal(err)
	}
	r := reps[0]
	var out bytes.Buffer
	r.WriteReport(&out, "burst")
	if !r.Agree() {
		t.Fatalf("disagrees:\n%s", out.String())
	}
	if r.FramesRead != framesRead || r.EmptyCache != emptyCache || r.InferredFailures != inferred || r.FramesOverruled != overruled {
		t.Errorf("frames read %d, empty_cache %d, inferred failures %d, overruled %d; want %d, %d, %d, %d\n%s",
			r.FramesRead, r.EmptyCache, r.InferredFailures, r.FramesOverruled, framesRead, emptyCache, inferred, overruled, out.String())
	}
	b, ok := r.TightestBound()
	switch {
	case bound == 0 && ok:
		t.Errorf("capacity bound %d B reported, want none\n%s", b.Limit(), out.String())
	case bound != 0 && (!ok || b.Limit() != bound):
		t.Errorf("capacity bound %d B (reported: %t), want %d B\n%s", b.Limit(), ok, bound, out.String())
	case bound != 0 && !strings.Contains(out.String(), "less than 734003200 B"):
		t.Errorf("the report does not state the bound:\n%s", out.String())
	}
	if r.PeakSimulated != r.PeakRecorded {
		t.Errorf("peak reserved %d B simulated, %d B recorded", r.PeakSimulated, r.PeakRecorded)
	}
}
