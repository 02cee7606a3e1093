package pickle

import (
	"bytes"
	"encoding/binary"
	"math/rand/v2"
	"testing"

	"membench/internal/cpuclock"
)

// refRunRef is refRun's reference: one reference at a time, as
// fastBatch read them before refRun.
func refRunRef(buf []byte, j int, depths []uint8) (int, int, uint8, uint8, bool) {
	cnt := 0
	var dmax, dor uint8
	for j+5 <= len(buf) {
		var idx uint
		n := 0
		switch buf[j] {
		case OpLongBinGet:
			idx, n = uint(binary.LittleEndian.Uint32(buf[j+1:])), 5
		case OpBinGet:
			idx, n = uint(buf[j+1]), 2
		default:
			return j, cnt, dmax, dor, true
		}
		if idx >= uint(len(depths)) {
			return j + n, 0, 0, 0, false
		}
		dp := depths[idx]
		if dp == 0 {
			return j, cnt, dmax, dor, true
		}
		dmax, dor = max(dmax, dp&63), dor|dp
		cnt++
		j += n
	}
	return j, cnt, dmax, dor, true
}

// TestRefRun compares refRun with its reference on random runs of
// references of both widths, to slots with and without a depth byte and
// beyond the memo, cut anywhere by the window's end or another opcode.
func TestRefRun(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	memo := make([]uint8, 2*memoChunk)
	for i := range memo {
		if rng.IntN(8) != 0 {
			memo[i] = uint8(1+rng.IntN(62)) | uint8(rng.IntN(4))<<6
		}
	}
	for range 20000 {
		var buf []byte
		for range rng.IntN(40) {
			idx := rng.IntN(2*memoChunk + 64)
			if idx < 256 && rng.IntN(2) == 0 {
				buf = append(buf, OpBinGet, byte(idx))
			} else {
				buf = append(buf, OpLongBinGet)
				buf = binary.LittleEndian.AppendUint32(buf, uint32(idx))
			}
		}
		if rng.IntN(2) == 0 {
			buf = append(buf, OpAppends, OpEmptyDict, OpMark, OpStop, 0)
		}
		buf = buf[:rng.IntN(len(buf)+1)]
		j0 := 0
		if len(buf) > 0 {
			j0 = rng.IntN(len(buf))
		}
		j, n, dm, do, ok := refRun(buf, j0, memo)
		rj, rn, rdm, rdo, rok := refRunRef(buf, j0, memo)
		if ok != rok || (ok && (j != rj || n != rn || dm != rdm || do != rdo)) {
			t.Fatalf("refRun(% x, %d) = %d %d %d %d %v, want %d %d %d %d %v", buf, j0, j, n, dm, do, ok, rj, rn, rdm, rdo, rok)
		}
	}
}

// BenchmarkFastBatch is fastBatch over a frames list of fifty memo
// references (cpu-ns/ref): all LONG_BINGET, or mixed with BINGET.
func BenchmarkFastBatch(b *testing.B) {
	for _, mixed := range []bool{false, true} {
		name := "long"
		if mixed {
			name = "mixed"
		}
		b.Run(name, func(b *testing.B) {
			d := NewMachine(bytes.NewReader(nil), nil, NodeValue, DefaultLimits)
			for i := range 2048 {
				if err := d.memoPut(uint64(i), Val{Kind: KindSkipped, Shape: ShapeDict, Depth: 1, Tag: uint8(i % 3)}); err != nil {
					b.Fatal(err)
				}
			}
			var buf []byte
			for i := range 50 {
				idx := 300 + (i*37)%1700
				if mixed && i%3 == 0 {
					idx = (i * 7) % 256
				}
				if idx < 256 {
					buf = append(buf, OpBinGet, byte(idx))
				} else {
					buf = append(buf, OpLongBinGet)
					buf = binary.LittleEndian.AppendUint32(buf, uint32(idx))
				}
			}
			buf = append(buf, OpAppends, 0, 0, 0, 0, 0, 0, 0, 0)
			c0 := cpuclock.Now()
			for b.Loop() {
				d.fs.h = 0
				if _, cnt, _, _, ok := d.fastBatch(buf, 0); !ok || cnt != 50 {
					b.Fatal(cnt, ok)
				}
			}
			b.ReportMetric(float64((cpuclock.Now()-c0).Nanoseconds())/float64(b.N)/50, "cpu-ns/ref")
		})
	}
}

// nodeBuilder is a Builder whose Child names each (container node, key)
// pair by a different node, so that a wrong parent or key shows.
type nodeBuilder struct{}

func (nodeBuilder) Child(c *Val, key *Val) Node {
	n := Node(10 + 4*int(c.Node))
	switch {
	case key == nil:
	case key.Kind == KindStr:
		n += 1 + Node(key.N%2)
	default:
		n += 3
	}
	return n
}
func (nodeBuilder) Open(Node, Shape, int64) (int64, error) { return 0, nil }
func (nodeBuilder) SetItems(*Val, []Val) error             { return nil }
func (nodeBuilder) Append(*Val, []Val) error               { return nil }
func (nodeBuilder) Drop(*Val)                              {}
func (nodeBuilder) Describe(Node) string                   { return "node" }
func (nodeBuilder) Shape(Node) Shape                       { return ShapeNone }

// TestNextNode compares nextNode, the node fastDict gives the dict that
// follows a record it built, with newNode's on random stacks and marks
// whose top is such a record: below a list, a dict (as its value or in
// a key's place), a skipped or generic container, a scalar, a nested
// MARK or none.
func TestNextNode(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	vals := []Val{
		{Kind: KindNode, Shape: ShapeList, Node: 1},
		{Kind: KindNode, Shape: ShapeDict, Node: 2},
		{Kind: KindNode, Shape: ShapeSet, Node: 3},
		{Kind: KindSkipped, Shape: ShapeList},
		{Kind: KindSkipped, Shape: ShapeDict},
		{Kind: KindValue, Shape: ShapeList},
		{Kind: KindValue, Shape: ShapeDict},
		{Kind: KindStr, N: 0},
		{Kind: KindStr, N: 1},
		{Kind: KindInt, N: 7},
	}
	for range 4000 { // stacks of up to five from ten kinds: 4,000 reach every case many times
		d := NewMachine(bytes.NewReader(nil), nodeBuilder{}, 5, DefaultLimits)
		for range rng.IntN(6) {
			if rng.IntN(3) == 0 {
				d.marks = append(d.marks, len(d.stack))
			} else {
				d.stack = append(d.stack, vals[rng.IntN(len(vals))])
			}
		}
		d.stack = append(d.stack, Val{Kind: KindNode, Shape: ShapeDict, Node: Node(4 + rng.IntN(2))})
		if got, want := d.nextNode(), d.newNode(ShapeDict); got != want {
			t.Fatalf("stack %+v marks %v: nextNode %d, newNode %d", d.stack, d.marks, got, want)
		}
	}
}

// TestRecycleObjs checks that Recycle hands the next machine its object
// table empty and holding nothing (the decoded values are the caller's),
// and that a decode on the recycled table gives the same values.
func TestRecycleObjs(t *testing.T) {
	// (1, [2, 3], {"a": (4, 5)}, "x"*100): objects in the table.
	p := []byte{0x80, 2, OpMark, OpBinInt1, 1, OpEmptyList, OpMark, OpBinInt1, 2, OpBinInt1, 3, OpAppends}
	p = append(p, OpEmptyDict, OpShortBinUnicode, 1, 'a', OpBinInt1, 4, OpBinInt1, 5, OpTuple2, OpSetItem)
	p = append(p, OpBinUnicode, 100, 0, 0, 0)
	p = append(p, bytes.Repeat([]byte("x"), 100)...)
	p = append(p, OpTuple, OpStop)
	want, err := DecodeLimits(bytes.NewReader(p), DefaultLimits)
	if err != nil {
		t.Fatal(err)
	}
	found := 0
	for range 20 {
		got, d := runAny(t, bytes.NewReader(p))
		if !eq(got, want) {
			t.Fatalf("decoded on a recycled table: %#v, want %#v", got, want)
		}
		d.Recycle()
		// The pool is per processor: the tables just put back are
		// usually, not always, what the next Get returns.
		tt, ok := textPool.Get().(*textTables)
		if !ok {
			continue
		}
		if len(tt.objs) != 0 {
			t.Fatalf("recycled object table of %d objects", len(tt.objs))
		}
		for i, x := range tt.objs[:cap(tt.objs)] {
			if x != nil {
				t.Fatalf("recycled object table holds %#v at %d", x, i)
			}
		}
		if cap(tt.objs) > 0 {
			found++
		}
		textPool.Put(tt)
	}
	if found == 0 {
		t.Fatal("no object table came back from Recycle")
	}
}
