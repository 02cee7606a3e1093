package gen

import (
	"errors"
	"fmt"
	"io"
	"iter"
	"math"
	"math/bits"
	"runtime"
	"slices"
	"strconv"
	"strings"

	"membench/traces"
)

// Kind names a generator.
type Kind string

// The generators.
const (
	CNNTrain         Kind = "cnn-train"
	LLMServe         Kind = "llm-serve"
	TransformerTrain Kind = "transformer-train"
)

// ParamDoc documents one parameter of a generator.
type ParamDoc struct {
	Name    string
	Default string // the default value, or how it is derived
	Doc     string
}

// kindSpec is one generator: its parameters (sorted by name) and how to
// build it from resolved parameters.
type kindSpec struct {
	kind   Kind
	params []ParamDoc
	// build validates the parameters (read through p) and returns the
	// trace's body, its one-line description and its persistent set.
	build func(p *paramReader, seed uint64) (*plan, error)
}

// plan is a validated generator ready to run.
type plan struct {
	desc     string
	run      func(e *emitter)
	persistN int64 // buffers left live at the end of the trace
	persistB int64 // their bytes
}

var kinds = []*kindSpec{cnnSpec, serveSpec, trainSpec} // sorted by kind

func lookup(kind string) *kindSpec {
	for _, k := range kinds {
		if string(k.kind) == kind {
			return k
		}
	}
	return nil
}

// Kinds lists the generator kinds, sorted.
func Kinds() []string {
	var ks []string
	for _, k := range kinds {
		ks = append(ks, string(k.kind))
	}
	return ks
}

// Params documents the parameters of kind, sorted by name; nil for an
// unknown kind.
func Params(kind string) []ParamDoc {
	k := lookup(kind)
	if k == nil {
		return nil
	}
	return slices.Clone(k.params)
}

// New returns a Reader streaming the trace of kind for seed and params
// (parameter name to value; absent parameters take their defaults, see
// Params). An unknown kind or parameter, or a value that is malformed, out
// of range or that would make a tensor larger than traces.MaxSize, is an
// error that says which and lists what is valid.
//
// The Reader's Meta holds source, licence, description, kind, seed, then
// every parameter with its resolved value sorted by name, then
// persistent-buffers and persistent-bytes (what stays live at the end).
func New(kind string, seed uint64, params map[string]string) (traces.Reader, error) {
	k := lookup(kind)
	if k == nil {
		return nil, fmt.Errorf("gen: unknown kind %q (kinds: %s)", kind, strings.Join(Kinds(), ", "))
	}
	p := &paramReader{kind: k, given: params, vals: map[string]string{}}
	// Unknown parameters first, in sorted order so the message is stable.
	var unknown []string
	for name := range params {
		if !slices.ContainsFunc(k.params, func(d ParamDoc) bool { return d.Name == name }) {
			unknown = append(unknown, name)
		}
	}
	if len(unknown) > 0 {
		slices.Sort(unknown)
		return nil, fmt.Errorf("gen: %s: unknown parameter %s (parameters: %s)",
			kind, quoteList(unknown), strings.Join(paramNames(k), ", "))
	}
	pl, err := k.build(p, seed)
	if err == nil {
		err = p.err()
	}
	if err != nil {
		return nil, err
	}
	meta := traces.Meta{
		{Key: "source", Value: "membench generator"},
		{Key: "licence", Value: "generated (no licence needed)"},
		{Key: "description", Value: pl.desc},
		{Key: "kind", Value: kind},
		{Key: "seed", Value: strconv.FormatUint(seed, 10)},
	}
	for _, d := range k.params { // sorted by name
		v, ok := p.vals[d.Name]
		if !ok {
			panic("gen: parameter " + d.Name + " of " + kind + " was never resolved")
		}
		meta = append(meta, traces.KV{Key: d.Name, Value: v})
	}
	meta = append(meta,
		traces.KV{Key: "persistent-buffers", Value: strconv.FormatInt(pl.persistN, 10)},
		traces.KV{Key: "persistent-bytes", Value: strconv.FormatInt(pl.persistB, 10)},
	)
	return newReader(meta, pl.run), nil
}

func paramNames(k *kindSpec) []string {
	var ns []string
	for _, d := range k.params {
		ns = append(ns, d.Name)
	}
	return ns
}

func quoteList(ss []string) string {
	q := make([]string, len(ss))
	for i, s := range ss {
		q[i] = strconv.Quote(s)
	}
	return strings.Join(q, ", ")
}

// paramReader resolves parameters: the given value or the default, parsed
// and range-checked. It collects every error so that one call reports all
// bad values.
type paramReader struct {
	kind  *kindSpec
	given map[string]string
	vals  map[string]string // resolved values, for the meta
	errs  []error
}

func (p *paramReader) err() error {
	return errors.Join(p.errs...)
}

func (p *paramReader) fail(name, format string, args ...any) {
	p.errs = append(p.errs, fmt.Errorf("gen: %s: parameter %s: %s", p.kind.kind, name, fmt.Sprintf(format, args...)))
}

// failf reports an error that is not about one parameter's syntax.
func (p *paramReader) failf(format string, args ...any) {
	p.errs = append(p.errs, fmt.Errorf("gen: %s: %s", p.kind.kind, fmt.Sprintf(format, args...)))
}

func (p *paramReader) raw(name string) (string, bool) {
	if !slices.ContainsFunc(p.kind.params, func(d ParamDoc) bool { return d.Name == name }) {
		panic("gen: undocumented parameter " + name)
	}
	v, ok := p.given[name]
	return strings.TrimSpace(v), ok
}

// has reports whether name was given explicitly.
func (p *paramReader) has(name string) bool {
	_, ok := p.given[name]
	return ok
}

// int resolves an integer parameter in [min, max].
func (p *paramReader) int(name string, def, min, max int64) int64 {
	s, ok := p.raw(name)
	v := def
	if ok {
		var err error
		v, err = strconv.ParseInt(s, 10, 64)
		if err != nil {
			p.fail(name, "%q is not an integer", s)
			p.vals[name] = s
			return def
		}
	}
	p.vals[name] = strconv.FormatInt(v, 10)
	if v < min || v > max {
		p.fail(name, "%d is out of range (want %d..%d)", v, min, max)
		return def
	}
	return v
}

// float resolves a finite number in (min, max].
func (p *paramReader) float(name string, def, min, max float64) float64 {
	s, ok := p.raw(name)
	v := def
	if ok {
		var err error
		v, err = strconv.ParseFloat(s, 64)
		if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
			p.fail(name, "%q is not a finite number", s)
			p.vals[name] = s
			return def
		}
	}
	p.vals[name] = strconv.FormatFloat(v, 'g', -1, 64)
	if !(v > min && v <= max) {
		p.fail(name, "%s is out of range (want more than %g and at most %g)", p.vals[name], min, max)
		return def
	}
	return v
}

// choice resolves a parameter that takes one of opts.
func (p *paramReader) choice(name, def string, opts ...string) string {
	s, ok := p.raw(name)
	if !ok {
		s = def
	}
	p.vals[name] = s
	if !slices.Contains(opts, s) {
		p.fail(name, "%q is not one of %s", s, strings.Join(opts, ", "))
		return def
	}
	return s
}

// dtypeBytes is the size of one element of each accepted dtype.
var dtypeBytes = map[string]int64{"fp32": 4, "bf16": 2, "fp16": 2}

// sizeCheck verifies that every tensor size of a plan is in 1..MaxSize
// before the generator runs: each entry is a name and the factors whose
// product is the tensor's bytes. The largest tensor of each formula is
// checked, and every tensor the generator allocates is at most one of them.
type sizeCheck struct {
	p *paramReader
}

// need checks that the product of fs (all >= 1) is at most MaxSize.
func (c sizeCheck) need(what string, fs ...int64) {
	if _, ok := product(fs...); !ok {
		c.p.failf("%s would be %s bytes, more than traces.MaxSize (%d): reduce the dimensions", what, productString(fs), traces.MaxSize)
	}
}

// product multiplies positive factors; ok is false if the result exceeds
// MaxSize (or a factor is not positive).
func product(fs ...int64) (int64, bool) {
	v := uint64(1)
	for _, f := range fs {
		if f <= 0 {
			return 0, false
		}
		hi, lo := bits.Mul64(v, uint64(f))
		if hi != 0 || lo > uint64(traces.MaxSize) {
			return 0, false
		}
		v = lo
	}
	return int64(v), true
}

func productString(fs []int64) string {
	parts := make([]string, len(fs))
	for i, f := range fs {
		parts[i] = strconv.FormatInt(f, 10)
	}
	return strings.Join(parts, "×")
}

// ceilDiv is ⌈a/b⌉ for a >= 0, b > 0.
func ceilDiv(a, b int64) int64 { return (a + b - 1) / b }

// ---------------------------------------------------------------------
// Emission and streaming.

// batchEvents is how many events the generator coroutine produces before
// handing them over.
const batchEvents = 1024

// emitter is what a generator body writes events to. alloc returns the new
// id; ids are sequential from 1.
type emitter struct {
	buf   []traces.Event
	yield func([]traces.Event) bool
	next  uint64
}

// errStopped unwinds a generator body when its Reader is closed.
type errStopped struct{}

func (e *emitter) push(ev traces.Event) {
	e.buf = append(e.buf, ev)
	if len(e.buf) == cap(e.buf) {
		e.flush()
	}
}

func (e *emitter) flush() {
	if len(e.buf) == 0 {
		return
	}
	if !e.yield(e.buf) {
		panic(errStopped{})
	}
	e.buf = e.buf[:0]
}

// alloc emits an allocation of size bytes and returns its id.
func (e *emitter) alloc(size int64) uint64 {
	if size <= 0 || size > traces.MaxSize {
		// Validation bounds every size; reaching this is a bug.
		panic(fmt.Sprintf("gen: internal error: alloc of %d bytes", size))
	}
	e.next++
	e.push(traces.Event{Op: traces.OpAlloc, ID: e.next, Size: size, Time: traces.NoTime})
	return e.next
}

// free emits the free of id.
func (e *emitter) free(id uint64) {
	e.push(traces.Event{Op: traces.OpFree, ID: id, Time: traces.NoTime})
}

// freeAll frees every id of ids, in order.
func (e *emitter) freeAll(ids ...uint64) {
	for _, id := range ids {
		e.free(id)
	}
}

// mark emits a phase label.
func (e *emitter) mark(label string) {
	e.push(traces.Event{Op: traces.OpMark, Label: label, Time: traces.NoTime})
}

// markN emits the label prefix + ":" + n.
func (e *emitter) markN(prefix string, n int64) {
	var b [48]byte
	s := append(b[:0], prefix...)
	s = append(s, ':')
	s = strconv.AppendInt(s, n, 10)
	e.mark(string(s)) // the label's only allocation
}

// reader pulls batches of events from the generator coroutine.
type reader struct {
	meta traces.Meta
	next func() ([]traces.Event, bool)
	stop func()
	buf  []traces.Event
	i    int
	n    int // events returned so far
	done bool
}

func newReader(meta traces.Meta, body func(*emitter)) *reader {
	seq := func(yield func([]traces.Event) bool) {
		e := &emitter{buf: make([]traces.Event, 0, batchEvents), yield: yield}
		defer func() {
			if r := recover(); r != nil {
				if _, ok := r.(errStopped); !ok {
					panic(r)
				}
			}
		}()
		body(e)
		e.flush()
	}
	next, stop := iter.Pull(iter.Seq[[]traces.Event](seq))
	r := &reader{meta: meta, next: next, stop: stop}
	// A Reader dropped without Close must not leave its coroutine behind.
	// The cleanup's argument is stop, which does not reach r.
	runtime.AddCleanup(r, func(stop func()) { stop() }, stop)
	return r
}

func (r *reader) Meta() traces.Meta { return r.meta }

// Pos has the index of the last event returned; a generated trace has no
// file or lines.
func (r *reader) Pos() traces.Pos { return traces.Pos{Event: r.n - 1} }

func (r *reader) Next() (traces.Event, error) {
	if r.i < len(r.buf) {
		r.i++
		r.n++
		return r.buf[r.i-1], nil
	}
	if r.done {
		return traces.Event{}, io.EOF
	}
	// The previous batch is consumed: the coroutine may reuse its buffer.
	b, ok := r.next()
	if !ok || len(b) == 0 {
		r.done = true
		r.buf, r.i = nil, 0
		r.stop()
		return traces.Event{}, io.EOF
	}
	r.buf, r.i = b, 1
	r.n++
	return b[0], nil
}

// Close stops the generator. Next returns io.EOF afterwards.
func (r *reader) Close() error {
	r.done = true
	r.buf, r.i = nil, 0
	r.stop()
	return nil
}

var _ traces.Reader = (*reader)(nil)
