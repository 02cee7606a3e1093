package snapshot

import (
	"io"
	"math/big"
	"strconv"

	"membench/internal/pickle"
	"membench/torchlike"
)

// Writing is the reverse of Decode: membench writes snapshots so that a
// replay of any strategy (`membench export --format memory-viz`) opens in
// the viewer PyTorch users already know, pytorch.org/memory_viz, and in
// Python's torch.cuda._memory_viz. The dict follows allocator-spec §1.12:
// what torch.cuda.memory._snapshot() returns, with the keys MemoryViz
// reads (torch/utils/viz/MemoryViz.js: segments[].{device, address,
// total_size, stream, frames, blocks[].{size, requested_size, state,
// frames}}, device_traces[d][].{action, addr, size, stream, frames,
// device_free}) and the others _dump_snapshot writes (allocated_size,
// active_size, requested_size, segment_type, segment_pool_id,
// is_expandable, time_us), so that every reader of the real format finds
// what it expects.

// FramesFunc gives the frames list written for trace entry i of device
// d (nil: an empty list). Stack frames are not part of a Snapshot; a
// writer that has none writes empty lists, which MemoryViz shows as "block
// was allocated before _record_history was enabled".
type FramesFunc func(d, i int, e *TraceEntry) *pickle.List

// Value returns s as the dict torch.cuda.memory._snapshot() returns, in
// the pickle package's value model, with empty frames everywhere.
func Value(s *Snapshot) *pickle.Dict { return ValueFrames(s, nil) }

// ValueFrames is Value with each trace entry's frames from frames, for
// writers (the tests' snaptest) that shape the stacks a recording holds.
func ValueFrames(s *Snapshot, frames FramesFunc) *pickle.Dict {
	return value(s, func(dv int) any {
		tr := s.DeviceTraces[dv]
		l := &pickle.List{Items: make([]any, len(tr))}
		for i := range tr {
			e := &tr[i]
			var fl *pickle.List
			if frames != nil {
				fl = frames(dv, i, e)
			}
			l.Items[i] = entryValue(e, fl)
		}
		return l
	}, len(s.DeviceTraces))
}

// value is the snapshot dict with device dv's trace list from trace(dv),
// for devices 0 to ndev-1: a *pickle.List of entryValue dicts, or a
// *pickle.Stream of them (EncodePickleSpooled), which write the same
// bytes.
func value(s *Snapshot, trace func(dv int) any, ndev int) *pickle.Dict {
	top := pickle.NewDict()
	segs := &pickle.List{Items: make([]any, len(s.Segments))}
	for i := range s.Segments {
		segs.Items[i] = segmentValue(&s.Segments[i])
	}
	top.Set("segments", segs)
	traces := &pickle.List{Items: make([]any, ndev)}
	for dv := range ndev {
		traces.Items[dv] = trace(dv)
	}
	top.Set("device_traces", traces)
	switch {
	case s.Settings != nil:
		top.Set("allocator_settings", settingsValue(s.Settings))
	case len(s.ForeignSettings) > 0:
		d := pickle.NewDict()
		for _, kv := range s.ForeignSettings {
			d.Set(kv[0], kv[1])
		}
		top.Set("allocator_settings", d)
	}
	return top
}

// entryValue is trace entry e's dict, its frames fl (nil: an empty list).
func entryValue(e *TraceEntry, fl *pickle.List) *pickle.Dict {
	d := pickle.NewDict()
	d.Set("action", e.Action)
	if e.Action == torchlike.ActionOOM {
		// An oom entry has no address: device_free stands in its
		// place (§1.12).
		d.Set("device_free", e.DeviceFree)
	} else {
		d.Set("addr", e.Addr)
	}
	d.Set("size", e.Size)
	d.Set("stream", e.Stream)
	d.Set("time_us", e.TimeUS)
	if fl == nil {
		fl = &pickle.List{}
	}
	d.Set("frames", fl)
	return d
}

func segmentValue(sg *Segment) *pickle.Dict {
	d := pickle.NewDict()
	d.Set("device", int64(sg.Device))
	d.Set("address", sg.Address)
	d.Set("total_size", sg.TotalSize)
	d.Set("allocated_size", sg.AllocatedSize)
	d.Set("active_size", sg.ActiveSize)
	d.Set("requested_size", sg.RequestedSize)
	d.Set("stream", sg.Stream)
	d.Set("segment_type", sg.SegmentType)
	// segment_pool_id is (0, 0) for the default pools; any other id is a
	// private pool (CUDA graphs, MemPool), which is all the reader keeps.
	pool := pickle.Tuple{int64(0), int64(0)}
	if sg.PrivatePool {
		pool = pickle.Tuple{int64(1), int64(0)}
	}
	d.Set("segment_pool_id", pool)
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
	return d
}

// sizeMax is SIZE_MAX, what PyTorch writes as max_split_size when it is
// unlimited (its default).
var sizeMax = new(big.Int).SetUint64(1<<64 - 1)

// settingsValue is allocator_settings as CUDACachingAllocator's snapshot
// writes it (§1.12): the configuration string, its parsed knobs, and the
// roundup divisions keyed by their MiB boundary ("1" ... "32768").
func settingsValue(st *Settings) *pickle.Dict {
	d := pickle.NewDict()
	d.Set("PYTORCH_CUDA_ALLOC_CONF", st.PYTORCH_CUDA_ALLOC_CONF)
	if st.MaxSplitSize < 0 {
		d.Set("max_split_size", sizeMax)
	} else {
		d.Set("max_split_size", st.MaxSplitSize)
	}
	d.Set("garbage_collection_threshold", st.GarbageCollectionThreshold)
	d.Set("expandable_segments", st.ExpandableSegments)
	rd := pickle.NewDict()
	for i, n := range st.RoundupPower2Divisions {
		rd.Set(strconv.Itoa(1<<i), n)
	}
	d.Set("roundup_power2_divisions", rd)
	return d
}

// EncodePickle writes s as the pickle torch.cuda.memory._dump_snapshot
// writes, with empty frames, which Python's pickle, PyTorch's MemoryViz
// and this package's Decode all read. The same Snapshot gives the same
// bytes.
func EncodePickle(w io.Writer, s *Snapshot) error {
	return pickle.Encode(w, Value(s))
}

// SettingsOf returns the allocator_settings a PyTorch process configured
// as c would record: conf is its PYTORCH_CUDA_ALLOC_CONF string, and the
// structured fields are c's, so that a reader that ignores the string
// (MemoryViz, older tools) and one that parses it (validate) agree.
func SettingsOf(c torchlike.Config, conf string) *Settings {
	st := &Settings{
		PYTORCH_CUDA_ALLOC_CONF:    conf,
		MaxSplitSize:               c.MaxSplitSize,
		GarbageCollectionThreshold: c.GCThreshold,
		ExpandableSegments:         c.ExpandableSegments,
		RoundupPower2Divisions:     c.Divisions,
	}
	if st.MaxSplitSize <= 0 || st.MaxSplitSize == torchlike.DefaultConfig().MaxSplitSize {
		st.MaxSplitSize = -1
	}
	return st
}
