package snapshot

import (
	"bytes"
	"math"
	"testing"

	"membench/internal/pickle"
)

// TestBlocksTileTheirSegment checks the rule of old releases, whose
// blocks give no address: each such block starts where the previous one
// ends, the first at its segment's address (decodeSegment). The
// streaming decoder learns the segment's address only when the segment
// is complete, so it remembers which blocks had none; any int64 is an
// address a pickle may give, math.MinInt64 included, which a marker value
// once took for a missing one.
func TestBlocksTileTheirSegment(t *testing.T) {
	const seg = 1 << 30
	missing := int64(1) // no "address" key
	none := int64(2)    // "address": None
	for _, tc := range []struct {
		name       string
		blocksLast bool    // the segment's "blocks" key before its "address"
		addrs      []int64 // per block: an address, missing or none
		want       []int64
	}{
		{"all missing", false, []int64{missing, missing, missing}, []int64{seg, seg + 512, seg + 1536}},
		{"blocks before the address", true, []int64{missing, missing}, []int64{seg, seg + 512}},
		{"given then missing", false, []int64{seg + 4096, missing}, []int64{seg + 4096, seg + 4608}},
		{"None counts as missing", false, []int64{none, seg + 8192, none}, []int64{seg, seg + 8192, seg + 9216}},
		{"math.MinInt64 is an address", false, []int64{math.MinInt64, missing}, []int64{math.MinInt64, math.MinInt64 + 512}},
		{"math.MinInt64 blocks first", true, []int64{missing, math.MinInt64}, []int64{seg, math.MinInt64}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var blocks []any
			for i, a := range tc.addrs {
				b := pickle.NewDict()
				switch a {
				case missing:
				case none:
					set(t, b, "address", nil)
				default:
					set(t, b, "address", a)
				}
				set(t, b, "size", int64(512*(i+1)))
				set(t, b, "state", "inactive")
				blocks = append(blocks, b)
			}
			sg := pickle.NewDict()
			if tc.blocksLast {
				set(t, sg, "blocks", &pickle.List{Items: blocks})
			}
			set(t, sg, "address", int64(seg))
			set(t, sg, "total_size", int64(2<<20))
			set(t, sg, "stream", int64(0))
			if !tc.blocksLast {
				set(t, sg, "blocks", &pickle.List{Items: blocks})
			}
			top := pickle.NewDict()
			set(t, top, "segments", &pickle.List{Items: []any{sg}})
			e := pickle.NewDict() // an empty trace decodes as nil or empty
			set(t, e, "action", "alloc")
			set(t, e, "addr", int64(seg+1<<20))
			set(t, e, "size", int64(512))
			set(t, e, "stream", int64(0))
			set(t, top, "device_traces", &pickle.List{Items: []any{&pickle.List{Items: []any{e}}}})
			var buf bytes.Buffer
			if err := pickle.Encode(&buf, top); err != nil {
				t.Fatal(err)
			}
			data := buf.Bytes()
			s, err := DecodePickle(bytes.NewReader(data))
			if err != nil {
				t.Fatal(err)
			}
			var got []int64
			for _, b := range s.Segments[0].Blocks {
				got = append(got, b.Address)
			}
			if !slicesEqual(got, tc.want) {
				t.Fatalf("block addresses %v, want %v", got, tc.want)
			}
			sameDecode(t, tc.name, data, DefaultLimits)
			sameAsGeneric(t, tc.name, data)
		})
	}
}

func set(t *testing.T, d *pickle.Dict, k string, v any) {
	t.Helper()
	if err := d.Set(k, v); err != nil {
		t.Fatal(err)
	}
}

func slicesEqual(a, b []int64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
