package snaptest

import (
	"io"
	"strconv"

	"membench/internal/pickle"
	"membench/internal/pickle/pickletest"
	"membench/torchlike"
	"membench/torchlike/snapshot"
)

// Value returns s as the dict that torch.cuda.memory._snapshot() returns
// (without frames), in the pickle package's value model.
func Value(s *snapshot.Snapshot) *pickle.Dict {
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
			d.Set("frames", &pickle.List{})
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

// EncodePickle writes s as a pickle that torch.cuda.memory._dump_snapshot
// could have written (frames empty) and that PyTorch's MemoryViz can load.
func EncodePickle(w io.Writer, s *snapshot.Snapshot) error {
	return pickletest.Encode(w, Value(s))
}
