package snaptest

import (
	"io"
	"strconv"

	"membench/internal/pickle"
	"membench/internal/pickle/pickletest"
	"membench/torchlike"
	"membench/torchlike/snapshot"
)

// Value returns s as the dict that torch.cuda.memory._snapshot() returns,
// in the pickle package's value model. Segments and blocks get no frames;
// a trace entry gets frames that give back its Frames class (see
// Frames), shared between entries as PyTorch's pickles share them.
func Value(s *snapshot.Snapshot) *pickle.Dict {
	fr := newFrameSet()
	top := pickle.NewDict()
	segs := &pickle.List{Items: make([]any, len(s.Segments))}
	for i, sg := range s.Segments {
		d := pickle.NewDict()
		d.Set("device", int64(sg.Device))
		d.Set("address", sg.Address)
		d.Set("total_size", sg.TotalSize)
		d.Set("allocated_size", sg.AllocatedSize)
		d.Set("active_size", sg.ActiveSize)
		d.Set("requested_size", sg.RequestedSize)
		d.Set("stream", sg.Stream)
		d.Set("segment_type", sg.SegmentType)
		d.Set("segment_pool_id", pickle.Tuple{int64(0), int64(0)})
		d.Set("is_expandable", sg.IsExpandable)
		d.Set("frames", &pickle.List{})
		blocks := &pickle.List{Items: make([]any, len(sg.Blocks))}
		for j, b := range sg.Blocks {
			bd := pickle.NewDict()
			bd.Set("address", b.Address)
			bd.Set("size", b.Size)
			bd.Set("requested_size", b.RequestedSize)
			bd.Set("state", b.State)
			bd.Set("frames", &pickle.List{})
			blocks.Items[j] = bd
		}
		d.Set("blocks", blocks)
		segs.Items[i] = d
	}
	top.Set("segments", segs)
	traces := &pickle.List{Items: make([]any, len(s.DeviceTraces))}
	for dv, tr := range s.DeviceTraces {
		l := &pickle.List{Items: make([]any, len(tr))}
		for i, e := range tr {
			d := pickle.NewDict()
			d.Set("action", e.Action)
			if e.Action == torchlike.ActionOOM {
				d.Set("device_free", e.DeviceFree)
			} else {
				d.Set("addr", e.Addr)
			}
			d.Set("size", e.Size)
			d.Set("stream", e.Stream)
			d.Set("time_us", e.TimeUS)
			d.Set("frames", fr.list(e.Frames))
			l.Items[i] = d
		}
		traces.Items[dv] = l
	}
	top.Set("device_traces", traces)
	if st := s.Settings; st != nil {
		d := pickle.NewDict()
		d.Set("PYTORCH_CUDA_ALLOC_CONF", st.PYTORCH_CUDA_ALLOC_CONF)
		d.Set("max_split_size", st.MaxSplitSize)
		d.Set("garbage_collection_threshold", st.GarbageCollectionThreshold)
		d.Set("expandable_segments", st.ExpandableSegments)
		rd := pickle.NewDict()
		for i, n := range st.RoundupPower2Divisions {
			rd.Set(strconv.Itoa(1<<i), int64(n))
		}
		d.Set("roundup_power2_divisions", rd)
		top.Set("allocator_settings", d)
	}
	return top
}

// Frames returns a stack, innermost frame first, that a recording of
// class c could hold: for FramesMalloc the C++ frames of a release in
// malloc's retry (release_cached_blocks called from
// DeviceCachingAllocator::malloc), for FramesEmptyCache those of
// torch.cuda.empty_cache(), for FramesOther a Python-only stack of the
// program's own code, and none for FramesNone.
func Frames(c snapshot.FrameClass) []Frame {
	const native = "c10::cuda::CUDACachingAllocator::Native::"
	switch c {
	case snapshot.FramesMalloc:
		return []Frame{
			{"??", 0, native + "DeviceCachingAllocator::release_cached_blocks(std::shared_ptr<c10::GatheredContext> const&, c10::cuda::MempoolId_t)"},
			{"??", 0, native + "DeviceCachingAllocator::malloc(signed char, unsigned long, CUstream_st*)"},
			{"??", 0, native + "NativeCachingAllocator::malloc(void**, signed char, unsigned long, CUstream_st*)"},
			{"model.py", 42, "forward"},
		}
	case snapshot.FramesEmptyCache:
		return []Frame{
			{"??", 0, native + "DeviceCachingAllocator::release_cached_blocks(std::shared_ptr<c10::GatheredContext> const&, c10::cuda::MempoolId_t)"},
			{"??", 0, native + "DeviceCachingAllocator::emptyCache(c10::cuda::MempoolId_t)"},
			{"torch/cuda/memory.py", 224, "empty_cache"},
			{"train_empty_cache.py", 7, "step"},
		}
	case snapshot.FramesOther:
		return []Frame{{"train_empty_cache.py", 12, "forward"}, {"train_empty_cache.py", 30, "main"}}
	}
	return nil
}

// Frame is one stack frame as a snapshot records it.
type Frame struct {
	Filename string
	Line     int64
	Name     string
}

// frameSet makes each frame's dict once, so that entries share them
// through the memo as PyTorch's pickles do: every other entry of a class
// gets the previous entry's list itself, the others a new list of the
// same frame dicts (a batch of memo references, the decoder's fast
// path).
type frameSet struct {
	dicts map[Frame]*pickle.Dict
	last  map[snapshot.FrameClass]*pickle.List
	n     map[snapshot.FrameClass]int
}

func newFrameSet() *frameSet {
	return &frameSet{dicts: map[Frame]*pickle.Dict{}, last: map[snapshot.FrameClass]*pickle.List{}, n: map[snapshot.FrameClass]int{}}
}

func (fs *frameSet) list(c snapshot.FrameClass) *pickle.List {
	if c == snapshot.FramesNone {
		return &pickle.List{}
	}
	fs.n[c]++
	if l, ok := fs.last[c]; ok && fs.n[c]%2 == 0 {
		return l
	}
	l := &pickle.List{}
	for _, f := range Frames(c) {
		d, ok := fs.dicts[f]
		if !ok {
			d = pickle.NewDict()
			d.Set("filename", f.Filename)
			d.Set("line", f.Line)
			d.Set("name", f.Name)
			fs.dicts[f] = d
		}
		l.Items = append(l.Items, d)
	}
	fs.last[c] = l
	return l
}

// EncodePickle writes s as a pickle that torch.cuda.memory._dump_snapshot
// could have written (frames as Value gives them) and that PyTorch's
// MemoryViz can load.
func EncodePickle(w io.Writer, s *snapshot.Snapshot) error {
	return pickletest.Encode(w, Value(s))
}
