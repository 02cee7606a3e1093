package pickle_test

import (
	"bytes"
	"errors"
	"io"
	"testing"

	"membench/internal/pickle"
	"membench/internal/pickle/pickletest"
)

// TestEncodeRoundTrip: the test writer's pickles decode to what was
// written (the writer lives in pickletest, test support; this package
// only reads).
func TestEncodeRoundTrip(t *testing.T) {
	for name, want := range pickle.Expected {
		var buf bytes.Buffer
		if err := pickletest.Encode(&buf, want); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		got, err := pickle.Decode(&buf)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !pickle.Eq(got, want) {
			t.Errorf("%s: round trip differs", name)
		}
	}
	var buf bytes.Buffer
	if err := pickletest.Encode(&buf, map[string]any{"b": int64(-1 << 40), "a": []any{1, 2.5}}); err != nil {
		t.Fatal(err)
	}
	got, _ := pickle.Decode(&buf)
	if !pickle.Eq(got, pickle.DictOf("a", pickle.ListOf(int64(1), 2.5), "b", int64(-1<<40))) {
		t.Errorf("map round trip: %#v", got)
	}
	l := pickle.ListOf()
	l.Items = append(l.Items, l)
	if err := pickletest.Encode(io.Discard, l); err == nil {
		t.Errorf("cyclic value encoded without error")
	}
}

// streamOf is a Stream of items, and how many times Next was called.
func streamOf(items []any) (*pickle.Stream, *int) {
	calls := 0
	return &pickle.Stream{Next: func() (any, error) {
		if calls >= len(items) {
			return nil, io.EOF
		}
		calls++
		return items[calls-1], nil
	}}, &calls
}

// entries are n trace-entry-like dicts, fresh ones, with ints of every
// width and repeated strings.
func entries(n int) []any {
	out := make([]any, n)
	for i := range out {
		d := pickle.NewDict()
		d.Set("action", []string{"alloc", "free_requested", "free_completed"}[i%3])
		d.Set("addr", int64(i)<<uint(i%40))
		d.Set("size", int64(-i))
		d.Set("frames", &pickle.List{})
		out[i] = d
	}
	return out
}

// TestEncodeStream: a Stream is written with exactly the bytes of a
// *List of the same items, at every batch boundary (0, 1, 999, 1000,
// 1001, 2500 items) and inside other values, so that a writer may stream
// what it used to hold; each item is asked for once, in order.
func TestEncodeStream(t *testing.T) {
	for _, n := range []int{0, 1, 999, 1000, 1001, 2500} {
		items := entries(n)
		shared := pickle.ListOf("x")
		wrap := func(l any) any {
			// A container written before the stream, met again inside
			// an item, is fetched from the memo in both.
			return pickle.DictOf("before", shared, "trace", pickle.ListOf(l, "after"), "again", shared)
		}
		if n > 0 {
			items[n-1].(*pickle.Dict).Set("shared", shared)
		}
		var want, got bytes.Buffer
		if err := pickle.Encode(&want, wrap(&pickle.List{Items: items})); err != nil {
			t.Fatal(err)
		}
		s, calls := streamOf(items)
		if err := pickle.Encode(&got, wrap(s)); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got.Bytes(), want.Bytes()) {
			t.Errorf("%d items: a stream writes %d bytes, the list %d", n, got.Len(), want.Len())
		}
		if *calls != n {
			t.Errorf("%d items: Next called for %d", n, *calls)
		}
		v, err := pickle.Decode(&got)
		if err != nil {
			t.Fatalf("%d items: %v", n, err)
		}
		if !pickle.Eq(v, wrap(&pickle.List{Items: items})) {
			t.Errorf("%d items: decoded differs", n)
		}
	}
}

// TestEncodeStreamReuse: a stream's items are not remembered, so one
// *Dict that Next returns again and again (changed between calls) is
// written in full each time, as distinct dicts would be, not as a
// reference to the first.
func TestEncodeStreamReuse(t *testing.T) {
	const n = 1500
	d := pickle.NewDict()
	i := 0
	s := &pickle.Stream{Next: func() (any, error) {
		if i == n {
			return nil, io.EOF
		}
		i++
		d.Set("i", int64(i))
		return d, nil
	}}
	want := make([]any, n)
	for j := range want {
		want[j] = pickle.DictOf("i", int64(j+1))
	}
	var a, b bytes.Buffer
	if err := pickle.Encode(&a, s); err != nil {
		t.Fatal(err)
	}
	if err := pickle.Encode(&b, &pickle.List{Items: want}); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a.Bytes(), b.Bytes()) {
		t.Errorf("a reused item is not written as fresh ones")
	}
}

// TestEncodeStreamError: an error from Next ends Encode with it, at the
// first item or the 1500th.
func TestEncodeStreamError(t *testing.T) {
	boom := errors.New("boom")
	for _, at := range []int{0, 1500} {
		i := 0
		s := &pickle.Stream{Next: func() (any, error) {
			if i == at {
				return nil, boom
			}
			i++
			return int64(i), nil
		}}
		if err := pickle.Encode(io.Discard, pickle.ListOf(s)); !errors.Is(err, boom) {
			t.Errorf("error at item %d: Encode returned %v", at, err)
		}
	}
	// A stream inside itself is refused, as a list inside itself is.
	var s *pickle.Stream
	s = &pickle.Stream{Next: func() (any, error) { return s, nil }}
	if err := pickle.Encode(io.Discard, s); err == nil {
		t.Errorf("a stream inside itself encoded without error")
	}
}
