package snapshot

import (
	"bytes"

	"membench/internal/pickle"
)

// FrameClass is what a trace entry's stack frames say about the call
// that made the allocator act, reduced to what validation needs: the
// decoder reads past the frames themselves (see the package overview,
// "Decoding") and keeps only this.
//
// Why these two: memory returns to the device (segment_free,
// segment_unmap) only from torch.cuda.empty_cache() or from malloc when a
// device allocation failed and malloc released cached segments to retry
// (allocator-spec.md §1.7, §5.1), and a snapshot has no action that says
// which. The frames of the release do: in PyTorch's
// c10/cuda/CUDACachingAllocator.cpp, DeviceCachingAllocator::malloc
// gathers its context before it may call release_cached_blocks and
// DeviceCachingAllocator::emptyCache gathers its own, and release_block
// records the caller's context with the segment_free (or, when the caller
// gathered none, the context of the segment's allocation).
type FrameClass uint8

const (
	// FramesNone: the entry has no frames (none recorded, or an empty
	// list).
	FramesNone FrameClass = iota
	// FramesOther: frames that name neither emptyCache nor malloc (a
	// Python-only stack of the program's own code, say).
	FramesOther
	// FramesEmptyCache: a frame is torch.cuda.empty_cache (the Python
	// function empty_cache) or the allocator's ::emptyCache.
	FramesEmptyCache
	// FramesMalloc: a frame is DeviceCachingAllocator::malloc, and none
	// is emptyCache.
	FramesMalloc
)

func (c FrameClass) String() string {
	switch c {
	case FramesNone:
		return "none"
	case FramesOther:
		return "other"
	case FramesEmptyCache:
		return "empty_cache"
	case FramesMalloc:
		return "malloc"
	}
	return "FrameClass(?)"
}

// Tags of frame strings (pickle.Tagger): two bits, as the machine's fast
// path keeps.
const (
	tagEmptyCache = 1 << iota
	tagMalloc
)

var (
	nameEmptyCache = []byte("empty_cache")
	cppEmptyCache  = []byte("::emptyCache")
	cppMalloc      = []byte("DeviceCachingAllocator::malloc")
	cach           = []byte("Cach")
)

// frameTag is the tag of one string of a frame. The Python function is
// matched whole (a file name such as test_empty_cache.py must not
// count), C++ symbols by their qualified names, which no file name
// holds.
func frameTag(s []byte) uint8 {
	if len(s) < len(nameEmptyCache) {
		return 0
	}
	if bytes.Equal(s, nameEmptyCache) {
		return tagEmptyCache
	}
	// Both C++ names hold "Cach" (emptyCache, DeviceCachingAllocator):
	// one search rules out nearly every string a snapshot holds.
	k := bytes.Index(s, cach)
	if k < 0 {
		return 0
	}
	var t uint8
	if bytes.Contains(s[max(0, k-len("::empty")):], cppEmptyCache) {
		t |= tagEmptyCache
	}
	if bytes.Contains(s[max(0, k-len("Device")):], cppMalloc) {
		t |= tagMalloc
	}
	return t
}

// Tag makes the builder a pickle.Tagger: every string read is tagged, so
// that an entry's frames list, which is not built, carries the union of
// its frames' tags.
func (b *builder) Tag(s []byte) uint8 { return frameTag(s) }

// classOfTags is the class of a frames list with the given tags.
func classOfTags(nonEmpty bool, tag uint8) FrameClass {
	switch {
	case !nonEmpty:
		return FramesNone
	case tag&tagEmptyCache != 0:
		return FramesEmptyCache
	case tag&tagMalloc != 0:
		return FramesMalloc
	}
	return FramesOther
}

// frameClassOf classifies the value of an entry's "frames" key on the
// streaming path: a skipped list holds frames when it is deeper than an
// empty list.
func frameClassOf(v *pickle.Val) FrameClass {
	switch v.Kind {
	case pickle.KindSkipped, pickle.KindValue:
		if v.Shape == pickle.ShapeList || v.Shape == pickle.ShapeTuple {
			return classOfTags(v.Depth >= 2, v.Tag)
		}
	}
	return FramesNone
}

// genericFrameClass classifies a decoded frames value (FromValue): a
// list of frame dicts, whose strings are tagged as the streaming decoder
// tags them. Only the frames' own strings are read (no recursion: a
// frame is a flat dict).
func genericFrameClass(v any) FrameClass {
	switch v := v.(type) {
	case FrameClass:
		return v
	case *pickle.List:
		return framesOfItems(v.Items)
	case pickle.Tuple:
		return framesOfItems(v)
	}
	return FramesNone
}

func framesOfItems(items []any) FrameClass {
	var tag uint8
	for _, it := range items {
		d, ok := it.(*pickle.Dict)
		if !ok {
			continue
		}
		for _, x := range d.Values() {
			if s, ok := x.(string); ok {
				tag |= frameTag([]byte(s))
			}
		}
	}
	return classOfTags(len(items) > 0, tag)
}
