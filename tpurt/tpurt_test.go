package tpurt

// Table tests of each rule of the TPU runtime model (allocator-spec §6.4;
// package comment) against layouts computed by hand. A scenario runs
// `before` ops and checks the layout, then `ops` and checks the layout
// `after`, the allocations that failed and the counters.
//
// Ops, separated by ';': "alloc ID SIZE", "free ID", "load P SIZE" (a
// program), "unload P", and the check "loaded P yes|no" (ProgramLoaded).
//
// Layouts list the heap bottom to top: "P<size>" the programs'
// reservation, "F<size>" a free range, "ID:<size>" the buffer of live
// allocation ID, "ID:<size>/<requested>" when the request was rounded.
// Sizes are sums and differences of terms with an optional K or M suffix
// (binary): "1M-1536", "124K".
//
// Stats: "key=size ..." with keys inuse, reserved, defrags, moved,
// evictions, loads (programs loaded), ooms, footprint, mallocs (device
// calls).

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"testing"

	"membench/strategies"
)

type scenario struct {
	name   string
	opts   Options
	heap   string // device capacity; "" is 1MiB
	before string
	layout string // after before
	ops    string
	after  string
	fail   string // ids whose allocation or load failed, in order
	stats  string
	msg    string // a substring of the last failure's message
}

type rig struct {
	t      *testing.T
	a      *Allocator
	live   map[string]strategies.Handle
	progs  map[string]Program
	failed []string
	msg    string
}

func newRig(t *testing.T, opts Options, heap string) *rig {
	t.Helper()
	if heap == "" {
		heap = "1MiB"
	}
	d, err := strategies.ParseDevice("tpu-v6e:capacity=" + heap)
	if err != nil {
		t.Fatal(err)
	}
	return &rig{t: t, a: New(opts, strategies.NewMemory(&d)), live: map[string]strategies.Handle{}, progs: map[string]Program{}}
}

func size(t *testing.T, s string) int64 {
	t.Helper()
	var total int64
	sign := int64(1)
	for _, tok := range strings.FieldsFunc(strings.ReplaceAll(strings.ReplaceAll(s, "-", " - "), "+", " + "), func(r rune) bool { return r == ' ' }) {
		switch tok {
		case "-":
			sign = -1
			continue
		case "+":
			sign = 1
			continue
		}
		mult := int64(1)
		switch {
		case strings.HasSuffix(tok, "K"):
			mult, tok = 1<<10, strings.TrimSuffix(tok, "K")
		case strings.HasSuffix(tok, "M"):
			mult, tok = 1<<20, strings.TrimSuffix(tok, "M")
		}
		n, err := strconv.ParseInt(tok, 10, 64)
		if err != nil {
			t.Fatalf("test bug: size %q", s)
		}
		total += sign * n * mult
		sign = 1
	}
	return total
}

func (r *rig) run(ops string) {
	r.t.Helper()
	for _, op := range strings.Split(ops, ";") {
		f := strings.Fields(op)
		if len(f) == 0 {
			continue
		}
		switch f[0] {
		case "alloc":
			n := int64(math.MaxInt64)
			if f[2] != "max" {
				n = size(r.t, f[2])
			}
			h, ok := r.a.Malloc(n, 0)
			if ok {
				r.live[f[1]] = h
			} else {
				r.failed = append(r.failed, f[1])
				r.msg = r.a.LastOOM().Message
			}
		case "free":
			r.a.Free(r.live[f[1]])
			delete(r.live, f[1])
		case "load":
			p, err := r.a.LoadProgram(size(r.t, f[2]))
			if err != nil {
				r.failed = append(r.failed, f[1])
				r.msg = err.Error()
			} else {
				r.progs[f[1]] = p
			}
		case "unload":
			r.a.UnloadProgram(r.progs[f[1]])
		case "loaded":
			// "loaded P yes|no": what ProgramLoaded says of P (a P
			// never loaded is no program at all).
			p, ok := r.progs[f[1]]
			if !ok {
				p = -1
			}
			if got, want := r.a.ProgramLoaded(p), f[2] == "yes"; got != want {
				r.t.Errorf("after %q: ProgramLoaded(%s) = %v", op, f[1], got)
			}
		default:
			r.t.Fatalf("test bug: op %q", op)
		}
		if err := r.a.Check(); err != nil {
			r.t.Fatalf("after %q: %v", op, err)
		}
	}
}

// layout renders the heap in the scenarios' notation.
func (r *rig) layout() string {
	names := map[int64]string{}
	for id, h := range r.live {
		off, _ := r.a.Block(h)
		names[off] = id
	}
	var parts []string
	r.a.Layout(func(s strategies.Segment) {
		if s.Pool == "tpu_program" {
			parts = append(parts, "P"+human(s.Size))
			return
		}
		for _, b := range s.Blocks {
			if b.State == strategies.BlockFree {
				parts = append(parts, "F"+human(b.Size))
				continue
			}
			p := names[b.Addr-r.a.base] + ":" + human(b.Size)
			if b.Requested != b.Size {
				p += "/" + human(b.Requested)
			}
			parts = append(parts, p)
		}
	})
	return strings.Join(parts, " ")
}

// human writes n as the scenarios do: a multiple of 1K as "K", of 1M as
// "M", else bytes; a layout is compared after normalising both sides.
func human(n int64) string { return strconv.FormatInt(n, 10) }

func (r *rig) normal(layout string) string {
	var out []string
	for _, p := range strings.Fields(layout) {
		switch {
		case strings.HasPrefix(p, "P"), strings.HasPrefix(p, "F"):
			out = append(out, p[:1]+human(size(r.t, p[1:])))
		default:
			id, rest, _ := strings.Cut(p, ":")
			sz, req, rounded := strings.Cut(rest, "/")
			q := id + ":" + human(size(r.t, sz))
			if rounded {
				q += "/" + human(size(r.t, req))
			}
			out = append(out, q)
		}
	}
	return strings.Join(out, " ")
}

func (r *rig) checkStats(stats string) {
	r.t.Helper()
	st := r.a.Stats()
	for _, kv := range strings.Fields(stats) {
		k, v, _ := strings.Cut(kv, "=")
		var got int64
		switch k {
		case "inuse":
			got = st.BytesInUse
		case "reserved":
			got = st.BytesReserved
		case "defrags":
			got = st.DefragEvents
		case "moved":
			got = st.DefragMoved
		case "evictions":
			got = st.Evictions
		case "loads":
			got = st.ProgramLoads
		case "ooms":
			got = st.NumOOMs
		case "footprint":
			got = r.a.PeakFootprint()
		case "mallocs":
			got = r.a.Memory().Mallocs()
		default:
			r.t.Fatalf("test bug: stat %q", k)
		}
		if want := size(r.t, v); got != want {
			r.t.Errorf("%s = %d, want %d", k, got, want)
		}
	}
}

var scenarios = []scenario{
	{
		name: "the first buffer takes the top of the heap, rounded to 128 B (v6e: 1,472 → 1,536 at limit-1,536)",
		ops:  "alloc a 1472", after: "F1M-1536 a:1536/1472",
		stats: "inuse=1536 footprint=1536 mallocs=1",
	},
	{
		name:  "buffers stack top-down, contiguously; 32 B rounds to 128 B, larger sizes stay exact",
		ops:   "alloc a 1472; alloc b 29696; alloc c 32; alloc d 35328",
		after: "F1M-1536-29696-128-35328 d:35328 c:128/32 b:29696 a:1536/1472",
	},
	{
		name:   "a freed hole is reused from its top (v6e: 128 B at the top of a 1,024 B hole)",
		before: "alloc a 1K; alloc b 512; alloc c 512; alloc d 2K; free c; free b",
		layout: "F1M-4K d:2K F1K a:1K",
		ops:    "alloc e 32",
		after:  "F1M-4K d:2K F896 e:128/32 a:1K",
	},
	{
		name:   "the highest free range that fits, not the smallest (v6e chips 1 and 2: 821,760 B above, not in the smaller hole below)",
		before: "alloc a 1K; alloc x 300K; alloc b 1K; alloc c 522K; free x",
		layout: "F200K c:522K b:1K F300K a:1K",
		ops:    "alloc d 150K",
		after:  "F200K c:522K b:1K F150K d:150K a:1K",
	},
	{
		name:   "a range too small is passed over for a lower one",
		before: "alloc a 1K; alloc x 100K; alloc b 1K; free x",
		layout: "F1M-102K b:1K F100K a:1K",
		ops:    "alloc d 150K",
		after:  "F1M-252K d:150K b:1K F100K a:1K",
	},
	{
		name:   "an exact fit leaves no sliver",
		before: "alloc a 1K; alloc x 100K; alloc b 1K; free x",
		ops:    "alloc d 100K",
		after:  "F1M-102K b:1K d:100K a:1K",
	},
	{
		name:   "a free coalesces with the free ranges on both sides",
		before: "alloc a 1K; alloc b 2K; alloc c 4K; alloc d 8K; free b; free d",
		layout: "F1M-7K c:4K F2K a:1K",
		ops:    "free c",
		after:  "F1M-1K a:1K",
		stats:  "inuse=1K footprint=15K",
	},
	{
		name:   "a fragmentation OOM defragments: live buffers slide to the top in order, then the request fits",
		opts:   Options{Defrag: true},
		before: "alloc a 256K; alloc b 256K; alloc c 256K; alloc d 256K; free b; free d",
		layout: "F256K c:256K F256K a:256K",
		ops:    "alloc e 512K",
		after:  "e:512K c:256K a:256K",
		stats:  "defrags=1 moved=256K ooms=0 footprint=1M",
	},
	{
		name:   "without defragmentation the same request fails, in E0100's words",
		before: "alloc a 256K; alloc b 256K; alloc c 256K; alloc d 256K; free b; free d",
		ops:    "alloc e 512K",
		after:  "F256K c:256K F256K a:256K",
		fail:   "e",
		stats:  "defrags=0 ooms=1",
		msg:    "RESOURCE_EXHAUSTED: Error allocating device buffer: Attempting to allocate 512.00K. That was not possible. There are 512.00K free.; (0x0x0_HBM0)",
	},
	{
		name:  "a request beyond the free bytes fails without moving anything",
		opts:  Options{Defrag: true},
		ops:   "alloc a 600K; alloc b 600K",
		after: "F424K a:600K", fail: "b",
		stats: "defrags=0 ooms=1",
		msg:   "Attempting to allocate 600.00K. That was not possible. There are 424.00K free.",
	},
	{
		name:  "a request whose rounding overflows fails",
		ops:   "alloc a max",
		after: "F1M", fail: "a",
	},
	{
		name:  "a program is reserved at the bottom; buffers still come from the top",
		ops:   "load p 100K; alloc a 1K",
		after: "P100K F1M-101K a:1K",
		stats: "reserved=100K footprint=101K",
	},
	{
		name:   "a program needs reservable memory directly above the programs: buffers are not moved for it (E0101)",
		opts:   Options{Defrag: true},
		before: "alloc a 900K",
		ops:    "load p 200K",
		after:  "F124K a:900K", fail: "p",
		msg: "RESOURCE_EXHAUSTED: Error loading program: Attempting to reserve 200.00K at the bottom of memory. That was not possible. There are 124.00K free, 0B reserved, and 124.00K reservable.",
	},
	{
		name:   "a buffer evicts loaded programs, the last loaded first, until it fits",
		before: "load p 300K; load q 300K; alloc a 300K",
		layout: "P600K F124K a:300K",
		ops:    "alloc b 200K",
		after:  "P300K F224K b:200K a:300K",
		stats:  "evictions=1 reserved=300K",
	},
	{
		name:   "eviction, then defragmentation when the freed room is split",
		opts:   Options{Defrag: true},
		before: "load p 400K; alloc a 100K; alloc x 100K; alloc b 100K; free x",
		layout: "P400K F324K b:100K F100K a:100K",
		ops:    "alloc c 750K",
		after:  "F74K c:750K b:100K a:100K",
		stats:  "evictions=1 defrags=1 moved=100K reserved=0",
	},
	{
		name:   "a program load evicts idle programs before failing",
		before: "load p 300K; load q 300K; alloc a 300K",
		ops:    "load r 200K",
		after:  "P500K F224K a:300K",
		stats:  "evictions=1 reserved=500K",
	},
	{
		name:   "a program stays loaded across buffers that leave it room (a compiled replay reuses it)",
		before: "load p 300K; loaded p yes",
		ops:    "alloc a 600K; free a; alloc b 700K; loaded p yes",
		after:  "P300K F24K b:700K",
		stats:  "loads=1 evictions=0 reserved=300K",
	},
	{
		name:   "a buffer that needs the program's room evicts it: ProgramLoaded turns false, and a reload is a new load",
		before: "load p 300K; alloc a 600K",
		ops:    "alloc b 300K; loaded p no; free b; load p 300K; loaded p yes",
		after:  "P300K F124K a:600K",
		stats:  "loads=2 evictions=1 reserved=300K",
	},
	{
		name:  "an unloaded program is not loaded, nor is one never loaded",
		ops:   "load p 100K; unload p; loaded p no; loaded q no",
		after: "F1M",
		stats: "loads=1 evictions=0 reserved=0",
	},
	{
		name:   "unloading a program returns its room to the free range above",
		before: "load p 300K; load q 200K; alloc a 1K",
		ops:    "unload p",
		after:  "P200K F1M-201K a:1K",
		stats:  "reserved=200K",
	},
	{
		name:  "program_bytes loads one program before the first event",
		opts:  Options{ProgramBytes: 64 << 10},
		ops:   "alloc a 1K",
		after: "P64K F1M-65K a:1K",
		stats: "reserved=64K mallocs=1",
	},
}

func TestScenarios(t *testing.T) {
	for _, sc := range scenarios {
		t.Run(sc.name, func(t *testing.T) {
			r := newRig(t, sc.opts, sc.heap)
			r.run(sc.before)
			if sc.layout != "" {
				if got, want := r.layout(), r.normal(sc.layout); got != want {
					t.Fatalf("before ops:\n got  %s\n want %s", got, want)
				}
			}
			r.failed = nil
			r.run(sc.ops)
			if got, want := r.layout(), r.normal(sc.after); got != want {
				t.Errorf("after ops:\n got  %s\n want %s", got, want)
			}
			if got := strings.Join(r.failed, " "); got != sc.fail {
				t.Errorf("failed %q, want %q", got, sc.fail)
			}
			if sc.msg != "" && !strings.Contains(r.msg, sc.msg) {
				t.Errorf("message %q\nlacks %q", r.msg, sc.msg)
			}
			r.checkStats(sc.stats)
		})
	}
}

// TestHumanBytes: the runtime's spelling of sizes in E0100 and E0101.
func TestHumanBytes(t *testing.T) {
	for n, want := range map[int64]string{0: "0B", 512: "512B", 1536: "1.50K", 8 << 20: "8.00M",
		154813120: "147.64M", 31664701849: "29.49G", 1 << 50: "1.00P"} {
		if got := HumanBytes(n); got != want {
			t.Errorf("HumanBytes(%d) = %q, want %q", n, got, want)
		}
	}
}

// TestKnobs: the knobs parse, and say when they have no effect.
func TestKnobs(t *testing.T) {
	var k Knobs
	for kv, wantErr := range map[string]bool{"defrag=false": false, "program_bytes=1GiB": false, "defrag_via_host=yes": false,
		"program_bytes=-1": true, "program_bytes=lots": true, "defrag=maybe": true} {
		key, v, _ := strings.Cut(kv, "=")
		ok, err := k.Parse(key, v)
		if !ok || (err != nil) != wantErr {
			t.Errorf("%s: ok %v err %v", kv, ok, err)
		}
	}
	if ok, _ := k.Parse("preallocate", "true"); ok {
		t.Error("preallocate is not a TPU runtime knob")
	}
	k = Knobs{}
	for _, kv := range []string{"defrag=false", "program_bytes=1GiB"} {
		key, v, _ := strings.Cut(kv, "=")
		k.Parse(key, v)
	}
	if k.Defrag || !k.DefragSet || k.ProgramBytes != 1<<30 {
		t.Errorf("knobs %+v", k)
	}
	if k.NoEffect("program_bytes", strategies.TPU) != "" || k.NoEffect("program_bytes", strategies.GPU) == "" ||
		k.NoEffect("defrag_via_host", strategies.TPU) == "" {
		t.Error("NoEffect")
	}
	d, _ := strategies.ParseDevice("tpu-v6e")
	a := k.New(strategies.NewMemory(&d), "a framework note")
	if o := a.Options(); o.Defrag || o.ProgramBytes != 1<<30 || o.Granule != 128 {
		t.Errorf("options %+v", o)
	}
	notes := a.Notes()
	if len(notes) != 3 || !strings.Contains(notes[0], "assumption") || !strings.Contains(notes[1], "program_bytes=1073741824: one program of 1.00 GiB loaded") || notes[2] != "a framework note" {
		t.Errorf("notes %q", notes)
	}
	if (Knobs{}).New(strategies.NewMemory(&d)).Options().Defrag != true {
		t.Error("defrag is not on by default on a TPU")
	}
	fixed, _ := strategies.ParseDevice("tpu-v6e:relocatable=false")
	if (Knobs{}).New(strategies.NewMemory(&fixed)).Options().Defrag {
		t.Error("defrag is on by default on a device that cannot relocate")
	}
}

// TestProgramTooLarge: a program_bytes beyond the heap loads nothing and
// says so, and buffers still replay.
func TestProgramTooLarge(t *testing.T) {
	r := newRig(t, Options{ProgramBytes: 2 << 20}, "1MiB")
	if n := r.a.Notes(); len(n) < 2 || !strings.Contains(n[1], "no program is loaded") {
		t.Errorf("notes %q", n)
	}
	r.run("alloc a 1K")
	if got := r.layout(); got != r.normal("F1M-1K a:1K") {
		t.Errorf("layout %s", got)
	}
}

func ExampleHumanBytes() {
	fmt.Println(HumanBytes(33550237696), HumanBytes(16*1<<30-258<<20))
	// Output: 31.25G 15.75G
}

// TestProgramNoteSaysFootprint: the program program_bytes loads is in the
// footprint and in no trace's peak live bytes, so the note says that
// placement-frag-% counts it (a reader would otherwise take the program
// for placement waste).
func TestProgramNoteSaysFootprint(t *testing.T) {
	r := newRig(t, Options{ProgramBytes: 64 << 10}, "1MiB")
	if n := r.a.Notes(); len(n) < 2 || !strings.Contains(n[1], "placement-frag-% counts it as unused") {
		t.Errorf("notes %q", n)
	}
	r.run("alloc a 1K")
	if got := r.a.PeakFootprint(); got != 64<<10+1024 {
		t.Errorf("footprint %d, want the program and a", got)
	}
}
