package binset

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"membench/internal/freeset"
)

// workload draws keys the way the allocators' pools see them, with knobs
// that push the set into its corners: many keys of one size (spills),
// sizes above the classes and off the granule (the tree's), and several
// streams, some of them above 2^63 as unsigned handles.
type workload struct {
	name    string
	sizes   func(r *rand.Rand) int64
	streams []int64
	addrs   int64 // distinct addresses drawn from (× Gran)
}

var workloads = []workload{
	{"small-pool", func(r *rand.Rand) int64 { return Gran * (1 + r.Int64N(64)) }, []int64{0}, 1 << 12},
	{"one-size", func(r *rand.Rand) int64 { return Gran * (1 + r.Int64N(3)) }, []int64{0}, 1 << 10},
	{"all-classes", func(r *rand.Rand) int64 { return Gran * (1 + r.Int64N(Classes+200)) }, []int64{0}, 1 << 20},
	{"streams", func(r *rand.Rand) int64 { return Gran * (1 + r.Int64N(20)) }, []int64{7, 0, -3, 1 << 40}, 1 << 10},
	{"off-granule", func(r *rand.Rand) int64 {
		if r.IntN(3) == 0 {
			return 1 + r.Int64N(40*Gran)
		}
		return Gran * (1 + r.Int64N(40))
	}, []int64{0, 5}, 1 << 10},
	{"high-addresses", func(r *rand.Rand) int64 { return Gran * (1 + r.Int64N(8)) }, []int64{-1}, 1 << 10},
	// The largest classes and the tree's sizes just above them, where
	// BigInserts counts (Watch).
	{"largest-classes", func(r *rand.Rand) int64 { return Gran * (Classes - 2 + r.Int64N(5)) }, []int64{0}, 1 << 10},
}

// probe draws a search key: often a key of the set, else anything.
func probe(r *rand.Rand, w workload, in []freeset.Key) freeset.Key {
	if len(in) > 0 && r.IntN(2) == 0 {
		k := in[r.IntN(len(in))]
		switch r.IntN(3) {
		case 0:
			k.Addr, k.B = 0, 0
		case 1:
			k.Addr++
		}
		return k
	}
	k := freeset.Key{Stream: w.streams[r.IntN(len(w.streams))], Size: w.sizes(r), Addr: Gran * r.Int64N(w.addrs)}
	if w.name == "high-addresses" {
		k.Addr = -k.Addr
	}
	switch r.IntN(5) {
	case 0:
		k.Size = 0
	case 1:
		k.Size = Classes*Gran + r.Int64N(3)
	}
	return k
}

// TestAgainstFreeset runs random inserts, removes and replaces on a Set
// and a freeset.Set side by side, and checks that every search, the
// length, the items and membership agree after each step, and that a
// Clone taken midway goes on agreeing by itself.
func TestAgainstFreeset(t *testing.T) {
	for _, w := range workloads {
		t.Run(w.name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(uint64(len(w.name)), 99))
			s := New()
			for round := range 2 {
				// The second round reuses the set, Reset.
				roundOf(t, r, w, s, round)
			}
		})
	}
}

// roundOf is one round of TestAgainstFreeset on s, which must be empty.
func roundOf(t *testing.T, r *rand.Rand, w workload, s *Set, round int) {
	ref := freeset.New(false)
	var in []freeset.Key
	used := map[[2]int64]bool{} // (stream, addr) in the set
	var clone *Set
	var cloneRef *freeset.Set
	fresh := func() freeset.Key {
		for {
			k := freeset.Key{Stream: w.streams[r.IntN(len(w.streams))], Size: w.sizes(r), Addr: Gran * r.Int64N(w.addrs), B: r.Int32()}
			if w.name == "high-addresses" {
				k.Addr = -k.Addr
			}
			if !used[[2]int64{k.Stream, k.Addr}] {
				used[[2]int64{k.Stream, k.Addr}] = true
				return k
			}
		}
	}
	for step := range 20000 {
		target := 200
		if step%4000 > 2000 {
			target = 10
		}
		switch op := r.IntN(10); {
		case op < 4 && len(in) < target || len(in) == 0:
			k := fresh()
			s.Insert(k)
			ref.Insert(k)
			in = append(in, k)
		case op < 7:
			j := r.IntN(len(in))
			k := in[j]
			s.Remove(k)
			ref.Remove(k)
			in[j] = in[len(in)-1]
			in = in[:len(in)-1]
			delete(used, [2]int64{k.Stream, k.Addr})
		default:
			j := r.IntN(len(in))
			old := in[j]
			var k freeset.Key
			if r.IntN(2) == 0 {
				// A split remainder or a merge: the
				// same stream, a nearby address.
				k = old
				k.Size = w.sizes(r)
				delete(used, [2]int64{k.Stream, k.Addr})
				if r.IntN(2) == 0 {
					k.Addr += Gran
				}
				if used[[2]int64{k.Stream, k.Addr}] {
					k = fresh()
				} else {
					used[[2]int64{k.Stream, k.Addr}] = true
				}
			} else {
				k = fresh()
				delete(used, [2]int64{old.Stream, old.Addr})
			}
			s.Replace(old, k)
			ref.Replace(old, k)
			in[j] = k
		}
		if err := agree(r, w, s, ref, in); err != nil {
			t.Fatalf("round %d, step %d: %v", round, step, err)
		}
		if step == 7000 {
			clone, cloneRef = s.Clone(), ref.Clone()
		}
	}
	if clone != nil {
		items := cloneRef.Items()
		if got := clone.Items(); !slices.Equal(got, items) {
			t.Fatalf("the clone's items changed with the original's")
		}
		for _, k := range items {
			clone.Remove(k)
		}
		if clone.Len() != 0 {
			t.Fatalf("the clone holds %d keys after removing all", clone.Len())
		}
	}
	// Leave a spilled class, and a class of a chunk, for Reset to clear.
	if s.hasStream {
		for i := range ChunkMax + 3 {
			size := int64(Classes * Gran)
			if i > ChunkMax {
				size -= Gran
			}
			s.Insert(freeset.Key{Stream: s.stream, Size: size, Addr: int64(i+1) << 50, B: int32(i)})
		}
		if s.cls[Classes-1].m >= 0 {
			t.Fatalf("no class spilled")
		}
	}
	s.Reset()
	if s.Len() != 0 || len(s.Items()) != 0 {
		t.Fatalf("Reset left %d keys", s.Len())
	}
	if _, ok := s.Min(); ok {
		t.Fatalf("Reset left a minimum")
	}
	for c := range s.cls {
		if s.cls[c] != (class{}) {
			t.Fatalf("Reset left class %d as %+v", c, s.cls[c])
		}
	}
}

// agree compares s with ref: length, items, membership of the keys in
// and of keys not in, and every search from probes.
func agree(r *rand.Rand, w workload, s *Set, ref *freeset.Set, in []freeset.Key) error {
	if s.Len() != ref.Len() {
		return fmt.Errorf("Len %d, reference %d", s.Len(), ref.Len())
	}
	if r.IntN(20) == 0 {
		// A stale count or bit stays stale: a sample of the steps
		// finds it.
		if err := s.checkCounts(); err != nil {
			return err
		}
	}
	if r.IntN(50) == 0 {
		if got, want := s.Items(), ref.Items(); !slices.Equal(got, want) {
			return fmt.Errorf("Items\n got %v\nwant %v", got, want)
		}
	}
	for range 4 {
		k := probe(r, w, in)
		if g, want := s.Contains(k), ref.Contains(k); g != want {
			return fmt.Errorf("Contains(%v) %v, reference %v", k, g, want)
		}
		if err := searchesAgree(s, ref, k); err != nil {
			return err
		}
	}
	g, gok := s.Min()
	x, xok := ref.Min()
	if gok != xok || g != x {
		return fmt.Errorf("Min %v, reference %v", g, x)
	}
	g, gok = s.Max()
	x, xok = ref.Max()
	if gok != xok || g != x {
		return fmt.Errorf("Max %v, reference %v", g, x)
	}
	return nil
}

// searchesAgree compares the set's searches from k with the reference's.
func searchesAgree(s *Set, ref *freeset.Set, k freeset.Key) error {
	for _, op := range []struct {
		name      string
		got, want func(freeset.Key) (freeset.Key, bool)
	}{
		{"LowerBound", s.LowerBound, ref.LowerBound},
		{"After", s.After, ref.After},
		{"Before", s.Before, ref.Before},
	} {
		g, gok := op.got(k)
		x, xok := op.want(k)
		if gok != xok || (gok && g != x) {
			return fmt.Errorf("%s(%v) = %v %v, reference %v %v", op.name, k, g, gok, x, xok)
		}
	}
	return nil
}

// checkCounts recounts what the set keeps beside its keys: odd from the
// tree's keys, the bitmap and its summary from the classes' records, the
// count of class keys, and each spilled class's tree (ctreeCheck) with the
// lowest key its record keeps. A stale bit or count changes no answer by
// itself (a best fit asks the tree more often than it needs to, or less
// often than it must), which is why the searches alone would not catch
// it.
func (s *Set) checkCounts() error {
	odd := 0
	for _, k := range s.tree.Items() {
		if s.isOdd(k) {
			odd++
		}
		if _, ok := s.classOf(k); ok {
			return fmt.Errorf("class key %v in the tree", k)
		}
	}
	if odd != s.odd {
		return fmt.Errorf("odd %d, the tree has %d", s.odd, odd)
	}
	var bm [words]uint64
	var sum uint64
	n := 0
	for c := range s.cls {
		cl := s.cls[c]
		if cl.m == 0 {
			continue
		}
		bm[c>>6] |= 1 << (c & 63)
		sum |= 1 << (c >> 6)
		switch {
		case cl.m == 1:
			n++
		case cl.m >= 2:
			ch := &s.chunks[cl.m-2]
			n += int(ch.n)
			if ch.n < 2 || ch.addr[0] != cl.addr || ch.b[0] != cl.b {
				return fmt.Errorf("class %d: chunk of %d, record %+v", c, ch.n, cl)
			}
		default:
			t := &s.trees[-cl.m-1]
			if err := s.ctreeCheck(t); err != nil {
				return fmt.Errorf("class %d: %w", c, err)
			}
			n += int(t.n)
			if a, b := s.cfirst(t); a != cl.addr || b != cl.b {
				return fmt.Errorf("class %d: record %+v, lowest key %d %d", c, cl, a, b)
			}
		}
	}
	if bm != s.bits || sum != s.summary {
		return fmt.Errorf("bitmap disagrees with the classes' records")
	}
	// Every chunk is a class's or on the free list, once.
	owner := make([]int, len(s.chunks))
	for c := range s.cls {
		if m := s.cls[c].m; m >= 2 {
			owner[m-2]++
		}
	}
	for f, steps := s.freeC, 0; f != 0; f, steps = s.chunks[f-1].next, steps+1 {
		if f < 0 || int(f) > len(s.chunks) || steps > len(s.chunks) {
			return fmt.Errorf("free chunk list broken at %d", f)
		}
		owner[f-1]++
		if s.chunks[f-1].n != 0 {
			return fmt.Errorf("free chunk %d holds %d keys", f-1, s.chunks[f-1].n)
		}
	}
	for i, o := range owner {
		if o != 1 {
			return fmt.Errorf("chunk %d is held %d times (classes and free list)", i, o)
		}
	}
	if n != s.n {
		return fmt.Errorf("n %d, the classes hold %d", s.n, n)
	}
	return nil
}

// ctreeCheck checks a class tree's shape: every leaf at the same depth,
// addresses rising through the linked leaves, each inner node's maxima
// its children's largest addresses, no node empty, and its count.
func (s *Set) ctreeCheck(t *ctree) error {
	var leaves []int32
	var walk func(node int32, h int) (int64, error)
	walk = func(node int32, h int) (int64, error) {
		if h == 0 {
			lp := &s.cl[node]
			if lp.n == 0 {
				return 0, fmt.Errorf("empty leaf %d", node)
			}
			leaves = append(leaves, node)
			return lp.addr[lp.n-1], nil
		}
		in := &s.ci[node]
		if in.n == 0 || (node == t.root && in.n < 2) {
			return 0, fmt.Errorf("inner node %d of %d children", node, in.n)
		}
		for i := range int(in.n) {
			m, err := walk(in.child[i], h-1)
			if err != nil {
				return 0, err
			}
			if m != in.max[i] {
				return 0, fmt.Errorf("inner node %d: max %d, child's largest %d", node, in.max[i], m)
			}
		}
		return in.max[in.n-1], nil
	}
	if _, err := walk(t.root, int(t.height)); err != nil {
		return err
	}
	if leaves[0] != t.head || leaves[len(leaves)-1] != t.tail {
		return fmt.Errorf("head %d tail %d, leaves %v", t.head, t.tail, leaves)
	}
	n, prev := 0, int32(nilNode)
	var last uint64
	for i, lf := range leaves {
		lp := &s.cl[lf]
		if lp.prev != prev || (i+1 < len(leaves) && lp.next != leaves[i+1]) || (i+1 == len(leaves) && lp.next != nilNode) {
			return fmt.Errorf("leaf %d linked wrong", lf)
		}
		for j := range int(lp.n) {
			if n > 0 && uint64(lp.addr[j]) <= last {
				return fmt.Errorf("addresses out of order at leaf %d", lf)
			}
			last = uint64(lp.addr[j])
			n++
		}
		prev = lf
	}
	if n != int(t.n) {
		return fmt.Errorf("n %d, the leaves hold %d", t.n, n)
	}
	return nil
}

// TestDeepClasses grows three spilled classes to thousands of keys each,
// so that their trees (ctree.go) split inner nodes and grow to height 2
// and more, then shrinks them to nothing in random order, so that nodes
// empty, roots give way and trees are dropped, all the while against a
// freeset.Set: every step checks a random search of each kind, and every
// few hundred the whole order and the trees' shapes (checkCounts).
func TestDeepClasses(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	s, ref := New(), freeset.New(false)
	var in []freeset.Key
	used := map[int64]bool{}
	fresh := func() freeset.Key {
		for {
			k := freeset.Key{Size: Gran * (1 + r.Int64N(3)), Addr: Gran * r.Int64N(1<<20), B: r.Int32()}
			if r.IntN(40) == 0 {
				// A few keys of the tree: another stream, a
				// larger size.
				if r.IntN(2) == 0 {
					k.Stream = 9
				} else {
					k.Size = Classes*Gran + Gran
				}
			}
			if r.IntN(3) == 0 {
				k.Addr = -k.Addr // above 2^63, unsigned
			}
			if !used[k.Addr] {
				used[k.Addr] = true
				return k
			}
		}
	}
	check := func(step int) {
		for range 2 {
			k := probe(r, workloads[0], in)
			if r.IntN(2) == 0 && len(in) > 0 {
				k = in[r.IntN(len(in))]
				k.Addr += Gran * (r.Int64N(3) - 1)
			}
			if err := searchesAgree(s, ref, k); err != nil {
				t.Fatalf("step %d: %v", step, err)
			}
			if g, want := s.Contains(k), ref.Contains(k); g != want {
				t.Fatalf("step %d: Contains(%v) %v, reference %v", step, k, g, want)
			}
		}
		if step%500 == 0 {
			if err := s.checkCounts(); err != nil {
				t.Fatalf("step %d: %v", step, err)
			}
			if got, want := s.Items(), ref.Items(); !slices.Equal(got, want) {
				t.Fatalf("step %d: Items differ", step)
			}
			g, gok := s.Min()
			x, xok := ref.Min()
			if gok != xok || g != x {
				t.Fatalf("step %d: Min %v, reference %v", step, g, x)
			}
			g, gok = s.Max()
			x, xok = ref.Max()
			if gok != xok || g != x {
				t.Fatalf("step %d: Max %v, reference %v", step, g, x)
			}
		}
	}
	height := int32(0)
	for step := range 36000 {
		grow := step < 18000
		switch op := r.IntN(10); {
		case len(in) == 0 || grow && op < 6:
			k := fresh()
			s.Insert(k)
			ref.Insert(k)
			in = append(in, k)
		case op < 8 || !grow:
			j := r.IntN(len(in))
			k := in[j]
			s.Remove(k)
			ref.Remove(k)
			in[j] = in[len(in)-1]
			in = in[:len(in)-1]
			delete(used, k.Addr)
		default:
			// A remainder or a merge: a nearby address, often
			// the class's lowest key (a best fit's).
			j := r.IntN(len(in))
			old := in[j]
			if m, ok := s.LowerBound(freeset.Key{Stream: old.Stream, Size: old.Size}); ok && r.IntN(2) == 0 {
				old = m
				j = slices.Index(in, m)
			}
			k := old
			k.Size = Gran * (1 + r.Int64N(3))
			k.Addr += Gran
			if used[k.Addr] {
				k = fresh()
			} else {
				used[k.Addr] = true
			}
			delete(used, old.Addr)
			s.Replace(old, k)
			ref.Replace(old, k)
			in[j] = k
		}
		for _, tr := range s.trees {
			height = max(height, tr.height)
		}
		check(step)
	}
	if height < 2 {
		t.Errorf("the class trees grew to height %d only", height)
	}
	for _, k := range in {
		s.Remove(k)
		ref.Remove(k)
	}
	if s.Len() != 0 || len(s.trees) != len(s.freeT) || len(s.cl) != len(s.freeCL) || len(s.ci) != len(s.freeCI) {
		t.Errorf("emptied, the set holds %d keys, and %d of %d trees, %d of %d leaves, %d of %d inner nodes free",
			s.Len(), len(s.freeT), len(s.trees), len(s.freeCL), len(s.cl), len(s.freeCI), len(s.ci))
	}
}

// TestLowerU checks ctree.go's branchless binary search against a scan on
// every length up to a leaf's and every probe between and on the keys,
// addresses above 2^63 included (compared unsigned).
func TestLowerU(t *testing.T) {
	for n := range ctMax + 1 {
		addrs := make([]int64, n)
		for i := range addrs {
			addrs[i] = int64(uint64(i)*2*(1<<58) + 2) // crosses 2^63
		}
		for p := range 2*n + 2 {
			a := uint64(p) * (1 << 58)
			want := 0
			for want < n && uint64(addrs[want]) < a {
				want++
			}
			if got := lowerU(addrs, a); got != want {
				t.Fatalf("n %d, probe %#x: %d, want %d", n, a, got, want)
			}
		}
	}
}
