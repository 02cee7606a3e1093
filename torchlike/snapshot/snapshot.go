package snapshot

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"math/big"
	"math/bits"
	"membench/torchlike"
	"slices"
	"strconv"
	"strings"
	"sync"

	"membench/internal/pickle"
)

// Snapshot is a PyTorch CUDA memory snapshot (allocator-spec.md §1.12)
// without its stack frames.
type Snapshot struct {
	Segments     []Segment      // final layout, every device, in file order
	DeviceTraces [][]TraceEntry // DeviceTraces[d] is device d's trace, oldest first
	Settings     *Settings      // nil when the snapshot has no allocator_settings
	// ForeignSettings, written as allocator_settings when Settings is
	// nil, describe an allocator that is not PyTorch's (a membench
	// export of a BFC or TPU replay) as key and value strings, in order:
	// MemoryViz reads no allocator_settings key, and writing PyTorch's
	// would claim a configuration the model never had. Decode never
	// fills it: what it reads lands in Settings (Raw).
	ForeignSettings [][2]string
}

// Settings is the snapshot's allocator_settings.
type Settings struct {
	PYTORCH_CUDA_ALLOC_CONF    string
	MaxSplitSize               int64 // bytes; -1 = unlimited
	GarbageCollectionThreshold float64
	ExpandableSegments         bool
	// RoundupPower2Divisions[i] is the division count for sizes in
	// [2^i MiB, 2^(i+1) MiB) (slot 0 also covers everything below 1 MiB),
	// from the keys "1", "2", ... "32768" (MiB boundaries); 0 = none.
	RoundupPower2Divisions [16]int64
	// Raw holds every allocator_settings key with its value as text, for
	// metadata (nested dicts as {k: v, ...}).
	Raw map[string]string
}

// Segment is one cudaMalloc'd segment, or one contiguous mapped run of an
// expandable segment.
type Segment struct {
	Device        int
	Address       int64
	TotalSize     int64
	AllocatedSize int64
	ActiveSize    int64
	RequestedSize int64
	Stream        int64
	SegmentType   string // "large" or "small"
	IsExpandable  bool
	PrivatePool   bool    // segment_pool_id ≠ (0, 0): a CUDA graph's or MemPool's private pool
	Blocks        []Block // in address order, covering the segment
}

// Block is one block of a segment.
type Block struct {
	Address       int64
	Size          int64
	RequestedSize int64
	State         string // "active_allocated", "active_pending_free" or "inactive"
}

// Block states.
const (
	StateActiveAllocated   = "active_allocated"
	StateActivePendingFree = "active_pending_free"
	StateInactive          = "inactive"
)

// TraceEntry is one entry of a device trace.
type TraceEntry struct {
	Action     string // alloc, free_requested, free_completed, segment_alloc, ...
	Addr       int64
	Size       int64
	Stream     int64
	TimeUS     int64 // epoch microseconds; 0 when the snapshot has no clock
	DeviceFree int64 // oom only
	// Frames is what the entry's stack frames name (the frames
	// themselves are not kept): FramesNone when it has none.
	Frames FrameClass
}

// Decode reads a snapshot: a pickle as written by
// torch.cuda.memory._dump_snapshot, or the JSON dump of the same dict
// (recognized by a first non-blank byte of '{' or '[').
func Decode(r io.Reader) (*Snapshot, error) {
	br := getReader(r)
	defer putReader(br)
	for {
		b, err := br.Peek(1)
		if err != nil {
			if err == io.EOF {
				return nil, errors.New("snapshot: empty input")
			}
			return nil, fmt.Errorf("snapshot: %w", err)
		}
		switch b[0] {
		case ' ', '\t', '\r', '\n':
			br.Discard(1)
			continue
		case '{', '[':
			return DecodeJSON(br)
		}
		break
	}
	return DecodePickle(br)
}

// readerPool holds the read buffers of Decode and the trace reader: a
// small snapshot would otherwise pay for a fresh one (and the page faults
// of touching it) every time it is opened. They are smaller (32 KiB) than
// the pickle machine's reads (it refills a 64 KiB window when less than
// 16 KiB is left), so that once the bytes read to sniff the format are
// served, bufio passes each read straight to the input rather than
// copying the whole file through its buffer.
var readerPool = sync.Pool{New: func() any { return bufio.NewReaderSize(nil, 32<<10) }}

func getReader(r io.Reader) *bufio.Reader {
	br := readerPool.Get().(*bufio.Reader)
	br.Reset(r)
	return br
}

// putReader returns br to the pool, forgetting its reader.
func putReader(br *bufio.Reader) {
	br.Reset(nil)
	readerPool.Put(br)
}

// FromValue builds a Snapshot from a decoded pickle (or JSON) value: a dict
// with segments, device_traces and optionally allocator_settings, or (as
// torch.cuda.memory_snapshot() returns) a bare list of segments.
func FromValue(v any) (*Snapshot, error) {
	s := &Snapshot{}
	var segs, traces, settings any
	switch v := v.(type) {
	case *pickle.Dict:
		var okS, okT bool
		segs, okS = v.Get("segments")
		traces, okT = v.Get("device_traces")
		settings, _ = v.Get("allocator_settings")
		if !okS && !okT {
			return nil, errors.New("snapshot: not a memory snapshot: the dict has neither segments nor device_traces")
		}
	case *pickle.List, pickle.Tuple:
		segs = v
	default:
		return nil, fmt.Errorf("snapshot: not a memory snapshot: top level is %s, want dict", pickle.TypeName(v))
	}
	if segs != nil {
		items, err := seq(segs)
		if err != nil {
			return nil, fmt.Errorf("snapshot: segments: %w", err)
		}
		s.Segments = make([]Segment, len(items))
		for i, x := range items {
			if err := decodeSegment(&s.Segments[i], x); err != nil {
				return nil, fmt.Errorf("snapshot: segments[%d]%w", i, err)
			}
		}
	}
	if traces != nil {
		devs, err := seq(traces)
		if err != nil {
			return nil, fmt.Errorf("snapshot: device_traces: %w", err)
		}
		s.DeviceTraces = make([][]TraceEntry, len(devs))
		for d, x := range devs {
			entries, err := seq(x)
			if err != nil {
				return nil, fmt.Errorf("snapshot: device_traces[%d]: %w", d, err)
			}
			tr := make([]TraceEntry, len(entries))
			for i, e := range entries {
				if err := decodeEntry(&tr[i], e); err != nil {
					return nil, fmt.Errorf("snapshot: device_traces[%d][%d]%w", d, i, err)
				}
			}
			s.DeviceTraces[d] = tr
		}
	}
	if settings != nil {
		st, err := decodeSettings(settings)
		if err != nil {
			return nil, fmt.Errorf("snapshot: allocator_settings%w", err)
		}
		s.Settings = st
	}
	return s, nil
}

// Devices returns the devices that have segments or trace entries, sorted.
func (s *Snapshot) Devices() []int {
	var out []int
	for _, sg := range s.Segments {
		// Segments come device by device: a repeat of the last one
		// need not be kept (sorted and compacted below anyway).
		if len(out) == 0 || out[len(out)-1] != sg.Device {
			out = append(out, sg.Device)
		}
	}
	for d, tr := range s.DeviceTraces {
		if len(tr) > 0 {
			out = append(out, d)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// Trace returns device d's trace entries (nil if it has none).
func (s *Snapshot) Trace(d int) []TraceEntry {
	if d < 0 || d >= len(s.DeviceTraces) {
		return nil
	}
	return s.DeviceTraces[d]
}

// fieldError is a schema error below a path; the path is prefixed by the
// callers as the error travels up, giving e.g.
// "device_traces[0][17].size: want int, got str".
type fieldError struct {
	key string
	msg string
}

func (e *fieldError) Error() string { return "." + e.key + ": " + e.msg }

func wantGot(key, want string, v any) error {
	return &fieldError{key, "want " + want + ", got " + pickle.TypeName(v)}
}

func seq(v any) ([]any, error) {
	switch v := v.(type) {
	case *pickle.List:
		return v.Items, nil
	case pickle.Tuple:
		return v, nil
	}
	return nil, fmt.Errorf("want list, got %s", pickle.TypeName(v))
}

func asDict(v any) (*pickle.Dict, error) {
	d, ok := v.(*pickle.Dict)
	if !ok {
		return nil, fmt.Errorf(": want dict, got %s", pickle.TypeName(v))
	}
	return d, nil
}

// getInt reads an int field; def is used when the key is absent. A None
// value counts as absent (newer writers emit None for unknown fields).
func getInt(d *pickle.Dict, key string, def int64, required bool) (int64, error) {
	v, ok := d.Get(key)
	if !ok || v == nil {
		if required {
			return 0, &fieldError{key, "missing"}
		}
		return def, nil
	}
	switch n := v.(type) {
	case int64:
		return n, nil
	case *big.Int:
		return 0, &fieldError{key, "int " + shortInt(n) + " does not fit in 64 bits"}
	}
	return 0, wantGot(key, "int", v)
}

func getStr(d *pickle.Dict, key, def string, required bool) (string, error) {
	v, ok := d.Get(key)
	if !ok || v == nil {
		if required {
			return "", &fieldError{key, "missing"}
		}
		return def, nil
	}
	if s, ok := v.(string); ok {
		return canon(s), nil
	}
	return "", wantGot(key, "str", v)
}

// canon returns s as a string of its own: the constant of a known
// action, block state or segment type, otherwise a copy. The pickle
// machine's strings live in blocks it reuses for the next snapshot
// (pickle.Machine.Recycle), so none may be kept in a Snapshot.
func canon(s string) string {
	switch s {
	case torchlike.ActionAlloc:
		return torchlike.ActionAlloc
	case torchlike.ActionFreeRequested:
		return torchlike.ActionFreeRequested
	case torchlike.ActionFreeCompleted:
		return torchlike.ActionFreeCompleted
	case torchlike.ActionFree:
		return torchlike.ActionFree
	case torchlike.ActionSegmentAlloc:
		return torchlike.ActionSegmentAlloc
	case torchlike.ActionSegmentFree:
		return torchlike.ActionSegmentFree
	case torchlike.ActionSegmentMap:
		return torchlike.ActionSegmentMap
	case torchlike.ActionSegmentUnmap:
		return torchlike.ActionSegmentUnmap
	case torchlike.ActionSnapshot:
		return torchlike.ActionSnapshot
	case torchlike.ActionOOM:
		return torchlike.ActionOOM
	case torchlike.ActionUserDefined:
		return torchlike.ActionUserDefined
	case StateActiveAllocated:
		return StateActiveAllocated
	case StateActivePendingFree:
		return StateActivePendingFree
	case StateInactive:
		return StateInactive
	case "large":
		return "large"
	case "small":
		return "small"
	}
	return strings.Clone(s)
}

func getBool(d *pickle.Dict, key string) (bool, error) {
	v, ok := d.Get(key)
	if !ok || v == nil {
		return false, nil
	}
	switch b := v.(type) {
	case bool:
		return b, nil
	case int64:
		if b == 0 || b == 1 {
			return b == 1, nil
		}
	}
	return false, wantGot(key, "bool", v)
}

func getFloat(d *pickle.Dict, key string) (float64, error) {
	v, ok := d.Get(key)
	if !ok || v == nil {
		return 0, nil
	}
	switch f := v.(type) {
	case float64:
		return f, nil
	case int64:
		return float64(f), nil
	}
	return 0, wantGot(key, "float", v)
}

func decodeSegment(sg *Segment, v any) error {
	d, err := asDict(v)
	if err != nil {
		return err
	}
	dev, err := getInt(d, "device", 0, false)
	if err != nil {
		return err
	}
	if dev < 0 || dev > 1<<20 {
		return &fieldError{"device", fmt.Sprintf("device %d out of range", dev)}
	}
	sg.Device = int(dev)
	if sg.Address, err = getInt(d, "address", 0, true); err != nil {
		return err
	}
	if sg.TotalSize, err = getInt(d, "total_size", 0, true); err != nil {
		return err
	}
	if sg.AllocatedSize, err = getInt(d, "allocated_size", 0, false); err != nil {
		return err
	}
	if sg.ActiveSize, err = getInt(d, "active_size", 0, false); err != nil {
		return err
	}
	if sg.RequestedSize, err = getInt(d, "requested_size", 0, false); err != nil {
		return err
	}
	if sg.Stream, err = getInt(d, "stream", 0, false); err != nil {
		return err
	}
	if sg.IsExpandable, err = getBool(d, "is_expandable"); err != nil {
		return err
	}
	if pv, ok := d.Get("segment_pool_id"); ok {
		sg.PrivatePool = privatePool(pv)
	}
	def := "large"
	if sg.TotalSize == torchlike.SmallBuffer && !sg.IsExpandable {
		def = "small"
	}
	if sg.SegmentType, err = getStr(d, "segment_type", def, false); err != nil {
		return err
	}
	bv, ok := d.Get("blocks")
	if !ok || bv == nil {
		return nil
	}
	items, err := seq(bv)
	if err != nil {
		return &fieldError{"blocks", err.Error()}
	}
	sg.Blocks = make([]Block, len(items))
	next := sg.Address // old snapshots give no block addresses: blocks tile the segment
	for i, x := range items {
		if err := decodeBlock(&sg.Blocks[i], x, next); err != nil {
			return fmt.Errorf(".blocks[%d]%w", i, err)
		}
		next = sg.Blocks[i].Address + sg.Blocks[i].Size
	}
	return nil
}

// decodeBlock reads one block; next is the address of a block that gives
// none.
func decodeBlock(b *Block, x any, next int64) error {
	bd, err := asDict(x)
	if err == nil {
		b.Address, err = getInt(bd, "address", next, false)
	}
	if err == nil {
		b.Size, err = getInt(bd, "size", 0, true)
	}
	if err == nil {
		b.RequestedSize, err = getInt(bd, "requested_size", b.Size, false)
	}
	if err == nil {
		b.State, err = getStr(bd, "state", "", true)
	}
	return err
}

// hasAddress reports whether block x gives its address (None counts as
// absent, as getInt reads it); a block that does not tiles its segment.
func hasAddress(x any) bool {
	d, ok := x.(*pickle.Dict)
	if !ok {
		return false
	}
	v, ok := d.Get("address")
	return ok && v != nil
}

func decodeEntry(e *TraceEntry, v any) error {
	d, err := asDict(v)
	if err != nil {
		return err
	}
	if e.Action, err = getStr(d, "action", "", true); err != nil {
		return err
	}
	if e.Addr, err = getInt(d, "addr", 0, false); err != nil {
		return err
	}
	if e.Size, err = getInt(d, "size", 0, false); err != nil {
		return err
	}
	if e.Stream, err = getInt(d, "stream", 0, false); err != nil {
		return err
	}
	if e.TimeUS, err = getInt(d, "time_us", 0, false); err != nil {
		return err
	}
	if e.DeviceFree, err = getInt(d, "device_free", 0, false); err != nil {
		return err
	}
	if f, ok := d.Get("frames"); ok {
		e.Frames = genericFrameClass(f)
	}
	return nil
}

func decodeSettings(v any) (*Settings, error) {
	d, err := asDict(v)
	if err != nil {
		return nil, err
	}
	if d.Len() > maxSettings {
		return nil, fmt.Errorf(": %d keys, more than the limit of %d: %w", d.Len(), maxSettings, ErrLimit)
	}
	st := &Settings{MaxSplitSize: -1, Raw: make(map[string]string, d.Len())}
	var scratch []byte // formatText's, for all the values
	for k, x := range d.All() {
		st.Raw[formatText(k, &scratch)] = formatText(x, &scratch)
	}
	if st.PYTORCH_CUDA_ALLOC_CONF, err = getStr(d, "PYTORCH_CUDA_ALLOC_CONF", "", false); err != nil {
		return nil, err
	}
	if v, ok := d.Get("max_split_size"); ok {
		// SIZE_MAX ("unlimited") may be written as the unsigned value.
		if n, isBig := v.(*big.Int); isBig && n.Cmp(new(big.Int).SetUint64(1<<64-1)) == 0 {
			d.Set("max_split_size", int64(-1))
		}
	}
	if st.MaxSplitSize, err = getInt(d, "max_split_size", -1, false); err != nil {
		return nil, err
	}
	if st.MaxSplitSize < 0 {
		st.MaxSplitSize = -1 // SIZE_MAX written as int64
	}
	// PyTorch refuses a split limit under 20 MB and a threshold outside
	// (0, 1), 0 meaning off (allocator-spec §1.1): a snapshot with one
	// was not recorded by it, and validate would replay under a
	// configuration that means nothing PyTorch does.
	if st.MaxSplitSize > 0 && st.MaxSplitSize < minMaxSplitSize {
		return nil, &fieldError{"max_split_size", fmt.Sprintf("%d B is below %d B (max_split_size_mb must be at least 20): not a setting PyTorch records", st.MaxSplitSize, minMaxSplitSize)}
	}
	if st.GarbageCollectionThreshold, err = getFloat(d, "garbage_collection_threshold"); err != nil {
		return nil, err
	}
	if g := st.GarbageCollectionThreshold; g != 0 && !(g > 0 && g < 1) {
		return nil, &fieldError{"garbage_collection_threshold", fmt.Sprintf("%v is neither 0 (off) nor in (0, 1): not a setting PyTorch records", g)}
	}
	if st.ExpandableSegments, err = getBool(d, "expandable_segments"); err != nil {
		return nil, err
	}
	rv, ok := d.Get("roundup_power2_divisions")
	if !ok || rv == nil {
		return st, nil
	}
	const key = "roundup_power2_divisions"
	switch r := rv.(type) {
	case *pickle.Dict:
		for k, x := range r.All() {
			var mb int64
			switch k := k.(type) {
			case string:
				mb, err = strconv.ParseInt(k, 10, 64)
				if err != nil {
					return nil, &fieldError{key, fmt.Sprintf("key %q is not a MiB boundary", k)}
				}
			case int64:
				mb = k
			default:
				return nil, &fieldError{key, "key: want str, got " + pickle.TypeName(k)}
			}
			if mb <= 0 || mb&(mb-1) != 0 || mb > 1<<15 {
				return nil, &fieldError{key, fmt.Sprintf("key %d is not a power-of-two MiB boundary in 1..32768", mb)}
			}
			n, ok := x.(int64)
			if !ok {
				return nil, &fieldError{fmt.Sprintf("%s[%q]", key, formatValue(k)), "want int, got " + pickle.TypeName(x)}
			}
			if n < 0 || n > 1<<20 {
				return nil, &fieldError{key, fmt.Sprintf("division count %d out of range", n)}
			}
			st.RoundupPower2Divisions[bits.TrailingZeros64(uint64(mb))] = n
		}
	case *pickle.List, pickle.Tuple:
		items, _ := seq(r)
		if len(items) > 16 {
			return nil, &fieldError{key, fmt.Sprintf("%d slots, want at most 16", len(items))}
		}
		for i, x := range items {
			n, ok := x.(int64)
			if !ok {
				return nil, &fieldError{fmt.Sprintf("%s[%d]", key, i), "want int, got " + pickle.TypeName(x)}
			}
			if n < 0 || n > 1<<20 {
				return nil, &fieldError{key, fmt.Sprintf("division count %d out of range", n)}
			}
			st.RoundupPower2Divisions[i] = n
		}
	default:
		return nil, wantGot(key, "dict", rv)
	}
	return st, nil
}

// minMaxSplitSize is the smallest max_split_size PyTorch records: 20 MB,
// the least max_split_size_mb it accepts (kLargeBuffer).
const minMaxSplitSize = 20 << 20

// maxSettingText bounds the text of one settings value and maxSettings
// the number of keys: a settings dict can share containers through the
// pickle memo, and rendering every reference in full let a 743-byte file
// expand into gigabytes of text.
const (
	maxSettingText = 1024
	maxSettings    = 256
)

// settingKeys are the allocator_settings keys PyTorch writes (2.x), and
// metaKeys the metadata keys a reader gives them: formatting a known key
// costs no allocation.
var (
	settingKeys = [...]string{
		"PYTORCH_CUDA_ALLOC_CONF", "max_split_size", "garbage_collection_threshold",
		"expandable_segments", "pinned_num_register_threads", "release_lock_on_cudamalloc",
		"pinned_use_cuda_host_register", "graph_capture_record_stream_reuse",
		"roundup_power2_divisions", "last_allocator_settings",
	}
	metaKeys = func() (m [len(settingKeys)]string) {
		for i, k := range settingKeys {
			m[i] = "torch." + snapMetaKey(k)
		}
		return m
	}()
)

// knownSetting is the index of s in settingKeys, or -1.
func knownSetting(s string) int {
	for i, k := range settingKeys {
		if k == s {
			return i
		}
	}
	return -1
}

// formatValue renders a settings value as text for metadata: Python-like,
// with nested containers cut off below a small depth (a pickle can share
// a container many times over) and the whole cut at maxSettingText bytes.
func formatValue(v any) string {
	var scratch []byte
	return formatText(v, &scratch)
}

// formatText is formatValue with a buffer to write
// containers in, which the caller keeps for the next value: a builder
// or buffer of its own for each cost two allocations of every import
// (a snapshot's roundup_power2_divisions dict, its max_split_size).
func formatText(v any, scratch *[]byte) string {
	// Scalars, which are nearly all of a settings dict, without a
	// buffer: every import of a snapshot formats them.
	switch v := v.(type) {
	case nil:
		return "None"
	case bool:
		if v {
			return "True"
		}
		return "False"
	case int64:
		return strconv.FormatInt(v, 10)
	case string:
		if k := knownSetting(v); k >= 0 {
			return settingKeys[k]
		}
		// A copy: the decoder's strings do not outlive it.
		return strings.Clone(v[:min(len(v), maxSettingText)])
	}
	// With room for the roundup_power2_divisions dict ("{1: 0, 2: 0,
	// ...}", 126 bytes) at once: a strings.Builder grown from nothing
	// took five allocations of every import.
	if *scratch == nil {
		*scratch = make([]byte, 0, 160)
	}
	b := appendValue((*scratch)[:0], v, 0)
	*scratch = b
	if len(b) > maxSettingText {
		return string(b[:maxSettingText]) + "..."
	}
	return string(b)
}

// appendValue appends the text of v to b, as formatValue renders it,
// and returns the extended buffer; containers below depth 4 are "...",
// and it stops adding once b holds more than maxSettingText bytes.
func appendValue(b []byte, v any, depth int) []byte {
	if len(b) > maxSettingText {
		return b
	}
	if depth > 4 {
		return append(b, "..."...)
	}
	switch v := v.(type) {
	case nil:
		return append(b, "None"...)
	case bool:
		if v {
			return append(b, "True"...)
		}
		return append(b, "False"...)
	case int64:
		return strconv.AppendInt(b, v, 10)
	case *big.Int:
		return append(b, shortInt(v)...)
	case float64:
		return strconv.AppendFloat(b, v, 'g', -1, 64)
	case string:
		return append(b, v[:min(len(v), maxSettingText)]...)
	case []byte:
		return strconv.AppendQuote(b, string(v[:min(len(v), maxSettingText)]))
	case *pickle.List:
		return appendSeq(b, "[", v.Items, "]", depth)
	case pickle.Tuple:
		return appendSeq(b, "(", v, ")", depth)
	case *pickle.Dict:
		// By index: a range over All's function would capture b,
		// and put formatValue's array on the heap.
		b = append(b, '{')
		keys, vals := v.Keys(), v.Values()
		for i := range keys {
			if i > 0 {
				b = append(b, ", "...)
			}
			if i == 64 || len(b) > maxSettingText {
				b = append(b, "..."...)
				break
			}
			b = appendValue(b, keys[i], depth+1)
			b = append(b, ": "...)
			b = appendValue(b, vals[i], depth+1)
		}
		return append(b, '}')
	}
	return append(b, fmt.Sprint(v)...) // (Appendf would put b on the heap)
}

func appendSeq(b []byte, open string, items []any, close string, depth int) []byte {
	b = append(b, open...)
	for i, x := range items {
		if i > 0 {
			b = append(b, ", "...)
		}
		if i == 64 || len(b) > maxSettingText {
			b = append(b, "..."...)
			break
		}
		b = appendValue(b, x, depth+1)
	}
	return append(b, close...)
}
