package validate

import (
	"fmt"
	"io"
	"math"
	"strings"

	"membench/bfc"
	"membench/internal/freeset"
	"membench/xprof"
)

// Why a decision is undetermined: what the window does not show that the
// BFC's choice would depend on.
const (
	WhyUnseen   = "placed in memory the window had not shown as one free chunk (its state before the window is unknown)"
	WhyStart    = "the chosen free chunk may start below the known free memory (a gap or free memory of an unproven region below it)"
	WhySize     = "the chosen free chunk may be larger than the window shows, which could change the split or the choice"
	WhyRival    = "a smaller free chunk bordering unseen memory might fit (its true size is unknown)"
	maxUndShown = 6
)

// Options configure the model the recording is judged by.
type Options struct {
	// MaxFrag is max_internal_fragmentation_bytes; 0 means TSL's default
	// (128 MiB).
	MaxFrag int64
}

// Decision is one allocation as the recording and the model made it.
type Decision struct {
	Event                int   // index of the record in the allocator's events
	Requested, Rounded   int64 // bytes asked for; rounded to 256 (§2.2)
	Offset, Chunk        int64 // recorded: address − the report's base; chunk handed out
	ModelOffset, ModelCh int64 // the model's choice (-1 when it has none)
	Why                  string
}

// Report is the outcome of one allocator's validation.
type Report struct {
	Allocator string
	Limit     int64  // bytes_available + bytes_allocated + bytes_reserved, or -1
	Base      uint64 // lowest address the window shows: offsets count from it
	InUse0    int64  // bytes in use before the first event
	PreWindow int    // chunks allocated before the window and freed in it
	Events    int
	Allocs    int
	Agree     int
	Disagree  int
	// Undetermined counts, by reason (the Why* constants), the
	// allocations whose outcome depends on what the window does not show.
	Undetermined map[string]int
	// InUseChecked and InUseWrong count the events whose bytes in use
	// after the event were compared with the model's accounting (bytes
	// in use change by exactly the chunk handed out or taken back).
	InUseChecked, InUseWrong int
	FirstInUse               int // first event whose bytes in use differ, -1
	// Gaps counts the events at which the recording contradicts itself
	// (a chunk handed out over a live one, a free of memory that holds no
	// such live chunk): events the profiler lost, not the model's doing,
	// since no allocator could produce them. The recording is trusted from
	// there on; FirstGap describes the first.
	Gaps     int
	FirstGap string
	First    *Decision
	Context  []string // the events before the first disagreement, and the free chunks the model saw
}

func (r *Report) gap(i int, err error) {
	if r.Gaps == 0 {
		r.FirstGap = fmt.Sprintf("event %d: %v", i, err)
	}
	r.Gaps++
}

// Determined is how many allocations the window determines.
func (r *Report) Determined() int { return r.Agree + r.Disagree }

// OK reports whether every determined decision agrees and bytes in use
// agree after every event.
func (r *Report) OK() bool { return r.Disagree == 0 && r.InUseWrong == 0 }

// Allocator replays one BFC allocator's recorded requests through the
// BFC's rules and compares each decision with the recorded one (see the
// package comment for what is determined and how the model is kept on the
// recording's path).
func Allocator(a *xprof.Allocator, opts Options) (*Report, error) {
	maxFrag := opts.MaxFrag
	if maxFrag <= 0 {
		maxFrag = bfc.DefaultMaxInternalFragmentation
	}
	recs := a.Records
	rep := &Report{Allocator: a.Name, Limit: a.Limit(), Undetermined: map[string]int{}, FirstInUse: -1, Events: len(recs)}
	if len(recs) == 0 {
		return rep, nil
	}
	fail := func(i int, err error) (*Report, error) {
		return nil, fmt.Errorf("allocator %s, event %d: %w", a.Name, i, err)
	}

	// First pass: the chunks the recording shows, to learn which
	// addresses are inside one region, and the chunks allocated before
	// the window that it frees.
	var chunks [][2]int64
	var pre [][2]int64
	open := map[int64]bool{}
	base := uint64(math.MaxUint64)
	for i := range recs {
		r := &recs[i]
		const need = xprof.HasAddr | xprof.HasChunk
		if r.Has&need != need || r.Alloc && r.Has&xprof.HasRequested == 0 {
			return fail(i, fmt.Errorf("the event lacks addr, allocation_bytes or requested_bytes, which a BFC records on every event"))
		}
		if r.Addr >= 1<<62 || r.Chunk <= 0 || r.Chunk > 1<<50 {
			return fail(i, fmt.Errorf("address %#x or chunk of %d bytes is out of range", r.Addr, r.Chunk))
		}
		lo := int64(r.Addr)
		chunks = append(chunks, [2]int64{lo, lo + r.Chunk})
		base = min(base, r.Addr)
		switch {
		case r.Alloc:
			open[lo] = true
		case open[lo]:
			delete(open, lo)
		default:
			pre = append(pre, [2]int64{lo, lo + r.Chunk})
		}
	}
	rep.Base = base
	first := &recs[0]
	rep.InUse0 = first.InUse - first.Chunk
	if !first.Alloc {
		rep.InUse0 = first.InUse + first.Chunk
	}
	s := newState(chunks)
	for _, c := range pre {
		if err := s.occupy(c[0], c[1]); err != nil {
			rep.gap(0, fmt.Errorf("chunks allocated before the window: %w", err))
			s.forget(c[0], c[1])
			s.occupy(c[0], c[1])
		}
	}
	rep.PreWindow = len(pre)

	off := func(a int64) int64 { return a - int64(base) }
	inUse := rep.InUse0
	for i := range recs {
		r := &recs[i]
		lo := int64(r.Addr)
		if !r.Alloc {
			if _, err := s.release(lo, r.Chunk); err != nil {
				rep.gap(i, err)
				s.forget(lo, lo+r.Chunk)
			}
			inUse -= r.Chunk
		} else {
			rep.Allocs++
			d := Decision{Event: i, Requested: r.Requested, Rounded: bfc.RoundedBytes(r.Requested),
				Offset: off(lo), Chunk: r.Chunk, ModelOffset: -1, ModelCh: -1}
			d.Why = judge(s, &d, lo, maxFrag, off)
			switch {
			case d.Why != "":
				rep.Undetermined[d.Why]++
			case d.ModelOffset == d.Offset && d.ModelCh == d.Chunk:
				rep.Agree++
			default:
				rep.Disagree++
				if rep.First == nil {
					rep.First = &d
					rep.Context = context(a, s, i, d.Rounded, off)
				}
			}
			// Keep the model on the recording's path, so that each
			// decision is judged on the state the real allocator had,
			// and learn what the decision shows of unseen memory.
			s.learn(lo, r.Chunk, d.Rounded)
			if err := s.occupy(lo, lo+r.Chunk); err != nil {
				rep.gap(i, err)
				s.forget(lo, lo+r.Chunk)
				if err := s.occupy(lo, lo+r.Chunk); err != nil {
					return fail(i, err) // cannot happen: nothing live is left there
				}
			}
			inUse += r.Chunk
		}
		if r.Has&xprof.HasInUse != 0 {
			rep.InUseChecked++
			if r.InUse != inUse {
				rep.InUseWrong++
				if rep.FirstInUse < 0 {
					rep.FirstInUse = i
				}
				inUse = r.InUse // judge the next event on its own
			}
		}
	}
	return rep, nil
}

// judge decides one allocation: it fills the model's choice into d and
// returns "" when the window determines it, else why not. The model is
// FindChunkPtr on the free chunks the window shows: the smallest free
// chunk that fits, ties to the lowest address, split by bfc.Splits, the
// allocation keeping its low end (§2.2).
func judge(s *state, d *Decision, lo, maxFrag int64, off func(int64) int64) string {
	r := d.Rounded
	m, ok := s.free.LowerBound(freeset.Key{Size: r})
	if ok {
		d.ModelOffset = off(m.Addr)
		d.ModelCh = m.Size
		if bfc.Splits(m.Size, r, maxFrag) {
			d.ModelCh = r
		}
	}
	// Where the recording put it: inside a known free chunk, or not.
	// (When it is, that chunk fits, so the model has a choice: ok.)
	if k, in := s.at(lo); !in || k.B != free || lo+d.Chunk > k.Addr+k.Size || !ok {
		return WhyUnseen
	}
	below, above := s.extents(m)
	if below > 0 {
		return WhyStart
	}
	if above > 0 {
		most := m.Size + above
		if !bfc.Splits(m.Size, r, maxFrag) && bfc.Splits(most, r, maxFrag) {
			return WhySize
		}
		if nx, ok := s.free.After(m); ok && nx.Size <= most {
			return WhySize
		}
	}
	// A free chunk too small as known might reach r through unseen
	// memory beside it, and then fit better than m.
	rival := ""
	s.free.Ascend(freeset.Key{}, func(k freeset.Key) bool {
		if k.Size >= r {
			return false
		}
		if b, a := s.extents(k); k.Size+b+a >= r {
			rival = WhyRival
			return false
		}
		return true
	})
	return rival
}

// context describes the state around a disagreement: the five events
// before it and the smallest free chunks that fit.
func context(a *xprof.Allocator, s *state, i int, r int64, off func(int64) int64) []string {
	var lines []string
	for j := max(0, i-5); j <= i; j++ {
		e := &a.Records[j]
		what := "free "
		if e.Alloc {
			what = "alloc"
		}
		lines = append(lines, fmt.Sprintf("event %d: %s requested %s, chunk %s at offset %d, bytes in use after %s%s",
			j, what, bytesOf(e.Requested), bytesOf(e.Chunk), off(int64(e.Addr)), bytesOf(e.InUse), opSuffix(e.Op)))
	}
	n := 0
	s.free.Ascend(freeset.Key{Size: r}, func(k freeset.Key) bool {
		b, ab := s.extents(k)
		lines = append(lines, fmt.Sprintf("free chunk known to the model: offset %d, %s (may reach %s below, %s above)", off(k.Addr), bytesOf(k.Size), reach(b), reach(ab)))
		n++
		return n < 5
	})
	if n == 0 {
		lines = append(lines, "no known free chunk fits")
	}
	return lines
}

func reach(n int64) string {
	if n >= unbounded {
		return "unbounded"
	}
	return bytesOf(n)
}

func opSuffix(op string) string {
	if op == "" {
		return ""
	}
	if len(op) > 80 {
		op = op[:77] + "..."
	}
	return " (" + op + ")"
}

// Write prints the report as `membench validate` shows it.
func (r *Report) Write(w io.Writer, file string) {
	limit := "not recorded"
	if r.Limit >= 0 {
		limit = fmt.Sprintf("%d B", r.Limit)
	}
	fmt.Fprintf(w, "%s %s: BFC allocator (rules of TSL's bfc_allocator.cc; limit %s)\n", file, r.Allocator, limit)
	fmt.Fprintf(w, "  window: %d events, %d allocations; %d B in use before it (warm start), %d chunks allocated before it and freed in it\n",
		r.Events, r.Allocs, r.InUse0, r.PreWindow)
	und := r.Allocs - r.Determined()
	fmt.Fprintf(w, "  determined: %d of %d allocations (%s); %d agree, %d disagree\n", r.Determined(), r.Allocs, pct(r.Determined(), r.Allocs), r.Agree, r.Disagree)
	if und > 0 {
		fmt.Fprintf(w, "  undetermined: %d (%s), never counted as agreement:\n", und, pct(und, r.Allocs))
		for _, why := range []string{WhyUnseen, WhyStart, WhySize, WhyRival} {
			if n := r.Undetermined[why]; n > 0 {
				fmt.Fprintf(w, "    %d %s\n", n, why)
			}
		}
	}
	if r.InUseWrong == 0 {
		fmt.Fprintf(w, "  bytes in use after each event: agree at all %d events\n", r.InUseChecked)
	} else {
		fmt.Fprintf(w, "  bytes in use after each event: %d of %d differ from the model's accounting, first at event %d\n", r.InUseWrong, r.InUseChecked, r.FirstInUse)
	}
	if r.Gaps > 0 {
		fmt.Fprintf(w, "  recording incomplete: %d events contradict what it recorded before (lost events?), first at %s; judged from the recording onwards\n", r.Gaps, r.FirstGap)
	}
	if d := r.First; d != nil {
		fmt.Fprintf(w, "  first divergence at event %d: request of %d B (rounded %d B)\n", d.Event, d.Requested, d.Rounded)
		fmt.Fprintf(w, "    recorded: chunk of %d B at offset %d\n", d.Chunk, d.Offset)
		if d.ModelCh < 0 {
			fmt.Fprintf(w, "    model:    no known free chunk fits\n")
		} else {
			fmt.Fprintf(w, "    model:    chunk of %d B at offset %d\n", d.ModelCh, d.ModelOffset)
		}
		for _, l := range r.Context {
			fmt.Fprintf(w, "    %s\n", l)
		}
	}
	switch {
	case r.OK() && r.Determined() == 0:
		fmt.Fprintf(w, "  no disagreement, but no allocation is determined: this window cannot confirm the model's choices (bytes in use %s)\n", map[bool]string{true: "agree", false: "differ"}[r.InUseWrong == 0])
	case r.OK():
		fmt.Fprintf(w, "  agree: every determined decision matches the BFC model\n")
	default:
		fmt.Fprintf(w, "  DISAGREE\n")
	}
}

func pct(n, of int) string {
	if of == 0 {
		return "n/a"
	}
	return strings.TrimSuffix(fmt.Sprintf("%.1f", 100*float64(n)/float64(of)), ".0") + "%"
}

func bytesOf(n int64) string { return fmt.Sprintf("%d B", n) }
