package snaptest

import (
	"io"

	"membench/internal/pickle"
	"membench/torchlike/snapshot"
)

// Value returns s as the dict that torch.cuda.memory._snapshot() returns,
// in the pickle package's value model: snapshot.ValueFrames, with each
// trace entry given frames that give back its Frames class (see Frames),
// shared between entries as PyTorch's pickles share them. Segments and
// blocks get no frames.
func Value(s *snapshot.Snapshot) *pickle.Dict {
	fr := newFrameSet()
	return snapshot.ValueFrames(s, func(_, _ int, e *snapshot.TraceEntry) *pickle.List { return fr.list(e.Frames) })
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
	return pickle.Encode(w, Value(s))
}
