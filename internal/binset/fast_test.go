package binset

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"membench/internal/freeset"
)

// TestShortPaths drives a Set through its short paths the way torch
// calls them — Put else Insert, Take else Remove, Move else Replace, Fit
// else LowerBound, TakeFit and then the update it did not do — beside a
// freeset.Set told the general operation, and compares them after every
// step (agree, and checkCounts every few steps). A short path that
// reports true must have done exactly the general operation; one that
// reports false must have changed nothing, which the general operation
// applied after it would otherwise find (a key twice, a stale bit or
// count). Fit's and TakeFit's keys must be LowerBound's.
//
// It also counts the keys inserted of at least the size the set watches,
// by every path, and requires BigInserts to match at every step: watching
// the largest class's size (whose keys the short paths insert) and a size
// above every class (only the tree's keys).
func TestShortPaths(t *testing.T) {
	for _, w := range workloads {
		for _, watch := range []int64{Classes * Gran, Classes*Gran + Gran} {
			t.Run(fmt.Sprintf("%s/watch=%d", w.name, watch), func(t *testing.T) {
				r := rand.New(rand.NewPCG(uint64(len(w.name)), 7))
				s := New()
				s.Watch(watch)
				big := shortPaths(t, r, w, s, 6000)
				if (w.name == "all-classes" || w.name == "largest-classes") && big == 0 {
					t.Errorf("no key of %d bytes or more was inserted: BigInserts went untested", watch)
				}
			})
		}
	}
}

// shortPaths runs steps of TestShortPaths on s, empty, and counts how
// often each short path reported true, so that the test fails if one
// never does its work (and so is not tested). It returns the keys of at
// least s's watched size inserted, which BigInserts must have counted.
func shortPaths(t *testing.T, r *rand.Rand, w workload, s *Set, steps int) uint64 {
	ref := freeset.New(false)
	var big uint64 // the keys of at least s.watch bytes inserted
	inserted := func(k freeset.Key) {
		if k.Size >= s.watch {
			big++
		}
	}
	var in []freeset.Key
	used := map[[2]int64]bool{} // (stream, addr) in the set
	// Addresses are multiples of 2^32, so that a remainder's (the
	// address plus sizes below 2^32) is no other key's.
	fresh := func() freeset.Key {
		for {
			k := freeset.Key{Stream: w.streams[r.IntN(len(w.streams))], Size: w.sizes(r), Addr: r.Int64N(w.addrs) << 32, B: r.Int32()}
			if w.name == "high-addresses" {
				k.Addr = -k.Addr - 1<<32
			}
			if !used[[2]int64{k.Stream, k.Addr}] {
				used[[2]int64{k.Stream, k.Addr}] = true
				return k
			}
		}
	}
	var hits [5]int // Put, Take, Move, Fit, TakeFit done
	for step := range steps {
		target := 60
		if step%2000 > 1000 {
			target = 8
		}
		switch op := r.IntN(10); {
		case op < 3 && len(in) < target || len(in) == 0:
			k := fresh()
			if s.Put(k) {
				hits[0]++
			} else {
				s.Insert(k)
			}
			inserted(k)
			ref.Insert(k)
			in = append(in, k)
		case op < 5:
			j := r.IntN(len(in))
			k := in[j]
			if s.Take(k) {
				hits[1]++
			} else {
				s.Remove(k)
			}
			ref.Remove(k)
			in[j] = in[len(in)-1]
			in = in[:len(in)-1]
			delete(used, [2]int64{k.Stream, k.Addr})
		case op < 7:
			// A merge: the same stream, the same address or one
			// below, a larger or other size.
			j := r.IntN(len(in))
			old := in[j]
			k := old
			k.Size, k.B = w.sizes(r), r.Int32()
			delete(used, [2]int64{old.Stream, old.Addr})
			if r.IntN(2) == 0 {
				k.Addr -= Gran
			}
			if used[[2]int64{k.Stream, k.Addr}] {
				k.Addr = old.Addr
			}
			used[[2]int64{k.Stream, k.Addr}] = true
			if s.Move(old, k) {
				hits[2]++
			} else {
				s.Replace(old, k)
			}
			inserted(k)
			ref.Replace(old, k)
			in[j] = k
		case op < 8:
			q := freeset.Key{Stream: w.streams[r.IntN(len(w.streams))], Size: w.sizes(r)}
			if k, ok := s.Fit(q.Stream, q.Size); ok {
				hits[3]++
				if x, xok := ref.LowerBound(q); !xok || x != k {
					t.Fatalf("step %d: Fit(%d, %d) = %v, LowerBound %v %v", step, q.Stream, q.Size, k, x, xok)
				}
			}
		default:
			// A malloc: the best fit, split or taken whole.
			stream, size := w.streams[r.IntN(len(w.streams))], w.sizes(r)
			if size <= 0 {
				size = Gran
			}
			minRem := []int64{1, Gran, 1 << 20, math.MaxInt64}[r.IntN(4)]
			want, wok := ref.LowerBound(freeset.Key{Stream: stream, Size: size})
			if wok && want.Stream == stream && used[[2]int64{stream, want.Addr + size}] {
				minRem = math.MaxInt64 // the remainder's address is taken
			}
			k, found, done := s.TakeFit(stream, size, minRem)
			if !found {
				if done {
					t.Fatalf("step %d: TakeFit done but not found", step)
				}
				k, found = s.LowerBound(freeset.Key{Stream: stream, Size: size})
			}
			if found != wok || found && k != want {
				t.Fatalf("step %d: TakeFit(%d, %d) = %v %v, LowerBound %v %v", step, stream, size, k, found, want, wok)
			}
			if !found || k.Stream != stream {
				break
			}
			j := 0
			for in[j] != k {
				j++
			}
			delete(used, [2]int64{k.Stream, k.Addr})
			if k.Size-size >= minRem {
				rem := freeset.Key{Stream: stream, Size: k.Size - size, Addr: k.Addr + size, B: k.B}
				used[[2]int64{rem.Stream, rem.Addr}] = true
				if !done {
					s.Replace(k, rem)
				}
				inserted(rem)
				ref.Replace(k, rem)
				in[j] = rem
			} else {
				if !done {
					s.Remove(k)
				}
				ref.Remove(k)
				in[j] = in[len(in)-1]
				in = in[:len(in)-1]
			}
			if done {
				hits[4]++
			}
		}
		if step%5 == 0 {
			if err := s.checkCounts(); err != nil {
				t.Fatalf("step %d: %v", step, err)
			}
		}
		if err := agree(r, w, s, ref, in); err != nil {
			t.Fatalf("step %d: %v", step, err)
		}
		if got := s.BigInserts(); got != big {
			t.Fatalf("step %d: BigInserts %d, %d keys of %d bytes or more inserted", step, got, big, s.watch)
		}
	}
	for i, name := range []string{"Put", "Take", "Move", "Fit", "TakeFit"} {
		if hits[i] == 0 {
			t.Errorf("%s never took its short path", name)
		}
	}
	return big
}

// TestRemoveAbsent checks that Remove and Replace of a key not in the set
// panic rather than take another (and that Take and Move report false,
// changing nothing), in every shape a class can have: empty,
// one key, a chunk, a tree; the key absent, or its address held by
// another block.
func TestRemoveAbsent(t *testing.T) {
	for _, n := range []int{0, 1, 3, ChunkMax + 4} {
		for _, probe := range []freeset.Key{
			{Size: 4 * Gran, Addr: 1 << 40, B: 1},     // no such address
			{Size: 4 * Gran, Addr: Gran << 20, B: 99}, // the first key's address, another block
		} {
			for _, op := range []string{"Remove", "Replace", "Take", "Move"} {
				s := New()
				s.Insert(freeset.Key{Size: Gran, Addr: 1}) // fixes the class stream, 0
				for i := range n {
					s.Insert(freeset.Key{Size: 4 * Gran, Addr: int64(i+1) * Gran << 20, B: int32(i)})
				}
				to := freeset.Key{Size: 8 * Gran, Addr: 1 << 41, B: 5}
				switch items := s.Items(); op {
				case "Take", "Move":
					// The short paths leave it to the general
					// methods, changing nothing.
					if op == "Take" && s.Take(probe) || op == "Move" && s.Move(probe, to) {
						t.Errorf("%d keys: %s(%v) reported true", n, op, probe)
					}
					if !slices.Equal(s.Items(), items) {
						t.Errorf("%d keys: %s(%v) changed the set", n, op, probe)
					}
				default:
					func() {
						defer func() {
							if recover() == nil {
								t.Errorf("%d keys: %s(%v) did not panic", n, op, probe)
							}
						}()
						if op == "Remove" {
							s.Remove(probe)
						} else {
							s.Replace(probe, to)
						}
					}()
				}
			}
		}
	}
}

// TestPutFullChunk checks that Put fills a class's chunk to ChunkMax keys,
// its second key taking the free chunk, and then leaves the next key to
// Insert, which spills the class into its
// tree, and that Take empties it back key by key.
func TestPutFullChunk(t *testing.T) {
	s := New()
	s.Insert(freeset.Key{Size: Gran, Addr: 1}) // fixes the class stream
	// A chunk made and freed, for Put's second key to take.
	s.Insert(freeset.Key{Size: 3 * Gran, Addr: 2})
	s.Insert(freeset.Key{Size: 3 * Gran, Addr: 3})
	s.Remove(freeset.Key{Size: 3 * Gran, Addr: 3})
	keys := make([]freeset.Key, ChunkMax+1)
	for i := range keys {
		keys[i] = freeset.Key{Size: 2 * Gran, Addr: int64(len(keys)-i) << 20, B: int32(i)}
		ok := s.Put(keys[i])
		if want := i < ChunkMax; ok != want {
			t.Fatalf("Put of key %d reported %v, want %v", i, ok, want)
		}
		if !ok {
			s.Insert(keys[i])
		}
		if err := s.checkCounts(); err != nil {
			t.Fatalf("after key %d: %v", i, err)
		}
	}
	if s.cls[1].m >= 0 {
		t.Fatalf("the class did not spill: m %d", s.cls[1].m)
	}
	for i, k := range keys {
		if !s.Take(k) {
			s.Remove(k)
		}
		if err := s.checkCounts(); err != nil {
			t.Fatalf("after taking key %d: %v", i, err)
		}
	}
	if s.Len() != 2 {
		t.Fatalf("Len %d after taking them all", s.Len())
	}
}
