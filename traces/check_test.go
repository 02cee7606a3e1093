package traces

import (
	"errors"
	"io"
	"strings"
	"testing"
)

func TestCheck(t *testing.T) {
	const h = "membench-trace 1\n"
	cases := []struct {
		name, in string
		want     string // "" for no error
		is       error
		events   int // events passed before the error (or in all)
	}{
		{"ok", h + "a 1 8\nf 1\na 1 8\nm x\nf 1\n", "", nil, 5},
		{"realloc after free", h + "a 7 8\nf 7\na 7 16\nf 7\n", "", nil, 4},
		{"leak is fine", h + "a 1 8\n", "", nil, 1},
		{"alloc live", h + "a 1 8\na 2 8\n# c\na 1 8\n", `c.trace:5 (event 2): alloc of an id that is still live: id 1`, ErrLiveID, 2},
		{"free unknown", h + "a 1 8\nf 2\n", `c.trace:3 (event 1): free of unknown id: id 2 was never allocated`, ErrUnknownID, 1},
		{"free unknown first", h + "f 0\n", `c.trace:2 (event 0): free of unknown id: id 0 was never allocated`, ErrUnknownID, 0},
		{"double free", h + "a 1 8\nf 1\nm x\nf 1\n", `c.trace:5 (event 3): double free: id 1 was already freed`, ErrDoubleFree, 3},
		{"double free after realloc", h + "a 1 8\nf 1\na 1 8\nf 1\nf 1\n", `c.trace:6 (event 4): double free: id 1 was already freed`, ErrDoubleFree, 4},
		{"far ids", h + "a 18446744073709551615 8\na 4096 8\na 4095 8\nf 4095\nf 4096\nf 18446744073709551615\nf 4097\n", `c.trace:8 (event 6): free of unknown id: id 4097 was never allocated`, ErrUnknownID, 6},
		{"reader error passes", h + "a 1 8\nx\n", `c.trace:3 (event 1): unknown record type "x" (want a, f, m or meta)`, nil, 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			nr, err := NewNativeReader("c.trace", strings.NewReader(c.in))
			if err != nil {
				t.Fatal(err)
			}
			r := Check(nr)
			defer r.Close()
			n := 0
			for {
				_, err = r.Next()
				if err != nil {
					break
				}
				n++
			}
			if n != c.events {
				t.Errorf("%d events passed, want %d", n, c.events)
			}
			if c.want == "" {
				if err != io.EOF {
					t.Errorf("err = %v, want io.EOF", err)
				}
				return
			}
			if err == io.EOF || err.Error() != c.want {
				t.Errorf("error:\n got %v\nwant %s", err, c.want)
			}
			var pe *PosError
			if !errors.As(err, &pe) {
				t.Errorf("%T is not a *PosError", err)
			}
			if c.is != nil && !errors.Is(err, c.is) {
				t.Errorf("error does not wrap %v", c.is)
			}
			if _, again := r.Next(); again != err {
				t.Errorf("error not sticky: %v then %v", err, again)
			}
		})
	}
}

// TestCheckSliceReader: without lines or names, the event index remains.
func TestCheckSliceReader(t *testing.T) {
	r := Check(&SliceReader{Events: []Event{
		{Op: OpAlloc, ID: 3, Size: 1, Time: NoTime},
		{Op: OpAlloc, ID: 4, Size: 0, Time: NoTime},
	}})
	if _, err := r.Next(); err != nil {
		t.Fatal(err)
	}
	_, err := r.Next()
	if !errors.Is(err, ErrBadSize) || err.Error() != "<input> (event 1): bad size: alloc of id 4 with size 0 (want 1..1125899906842624)" {
		t.Errorf("err = %v", err)
	}
}

func TestIDBitset(t *testing.T) {
	var s idBitset
	has := func(id uint64) bool {
		p, w, bit := s.loc(id, false)
		return p != nil && p.seen[w]&bit != 0
	}
	ids := []uint64{0, 1, 63, 64, 4095, 4096, 1 << 40, 1<<64 - 1}
	for _, id := range ids {
		if has(id) {
			t.Errorf("empty set has %d", id)
		}
		p, w, bit := s.loc(id, true)
		p.seen[w] |= bit
	}
	for _, id := range ids {
		if !has(id) {
			t.Errorf("set lacks %d", id)
		}
	}
	for _, id := range []uint64{2, 62, 65, 4094, 4097, 1<<40 + 1, 1<<64 - 2, 8192} {
		if has(id) {
			t.Errorf("set has %d", id)
		}
	}
	if len(s.pages) != 5 { // {0,1,63,64}, 4095, 4096, 1<<40, 1<<64-1
		t.Errorf("%d pages, want 5", len(s.pages))
	}
	// Sequential ids: one page per idPageBits.
	var seq idBitset
	for id := range uint64(100000) {
		seq.loc(id, true)
	}
	if want := (100000 + idPageBits - 1) / idPageBits; len(seq.pages) != want {
		t.Errorf("100000 sequential ids use %d pages, want %d", len(seq.pages), want)
	}
}
