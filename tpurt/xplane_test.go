package tpurt

// A minimal reader of the TPU runtime's allocator events in an XProf
// profile (*.xplane.pb), for the recording test only: the project's
// importer of profiler traces (package xprof) is the lead's, and this
// test switches to it when it lands. Schema: ../shared/traces/README.md,
// profiler/ section (tsl/profiler/protobuf/xplane.proto field numbers).

import (
	"cmp"
	"errors"
	"fmt"
	"slices"

	"google.golang.org/protobuf/encoding/protowire"
)

// memEvent is one MemoryAllocation or MemoryDeallocation of a TPU chip,
// with the stats the runtime recorded after it.
type memEvent struct {
	ps        int64 // absolute time: line timestamp_ns × 1000 + offset_ps
	order     int   // position in the file, to break ties deterministically
	alloc     bool
	chip      int64 // index_on_host
	addr      int64
	requested int64 // requested_bytes (allocations only)
	chunk     int64 // allocation_bytes (allocations only)
	inUse     int64 // bytes_allocated after the event
	reserved  int64 // bytes_reserved (programs) after the event
	available int64 // bytes_available after the event
}

// errBadWire is what a truncated or malformed message reports.
var errBadWire = errors.New("malformed protobuf")

// eachField calls fn for each field of message b. Varint and fixed
// values come as x, length-delimited ones as v.
func eachField(b []byte, fn func(num protowire.Number, x uint64, v []byte) error) error {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return fmt.Errorf("%w: tag: %w", errBadWire, protowire.ParseError(n))
		}
		b = b[n:]
		var x uint64
		var v []byte
		switch typ {
		case protowire.VarintType:
			x, n = protowire.ConsumeVarint(b)
		case protowire.Fixed64Type:
			x, n = protowire.ConsumeFixed64(b)
		case protowire.Fixed32Type:
			var y uint32
			y, n = protowire.ConsumeFixed32(b)
			x = uint64(y)
		case protowire.BytesType:
			v, n = protowire.ConsumeBytes(b)
		default:
			n = protowire.ConsumeFieldValue(num, typ, b)
		}
		if n < 0 {
			return fmt.Errorf("%w: field %d: %w", errBadWire, num, protowire.ParseError(n))
		}
		b = b[n:]
		if err := fn(num, x, v); err != nil {
			return err
		}
	}
	return nil
}

// readMemEvents returns every allocator event of the file's planes in
// time order.
func readMemEvents(data []byte) ([]memEvent, error) {
	var out []memEvent
	err := eachField(data, func(num protowire.Number, _ uint64, v []byte) error {
		if num != 1 { // XSpace.planes
			return nil
		}
		evs, err := planeMemEvents(v, len(out))
		out = append(out, evs...)
		return err
	})
	slices.SortStableFunc(out, func(x, y memEvent) int {
		return cmp.Or(cmp.Compare(x.ps, y.ps), cmp.Compare(x.order, y.order))
	})
	return out, err
}

// names reads a map<int64, *Metadata> entry: the key and the metadata's
// name (field 2 of both XEventMetadata and XStatMetadata).
func metadataName(entry []byte) (id uint64, name string, err error) {
	err = eachField(entry, func(num protowire.Number, x uint64, v []byte) error {
		switch num {
		case 1:
			id = x
		case 2:
			return eachField(v, func(n protowire.Number, _ uint64, w []byte) error {
				if n == 2 {
					name = string(w)
				}
				return nil
			})
		}
		return nil
	})
	return id, name, err
}

func planeMemEvents(plane []byte, order int) ([]memEvent, error) {
	eventNames := map[uint64]string{}
	statNames := map[uint64]string{}
	var lines [][]byte
	err := eachField(plane, func(num protowire.Number, _ uint64, v []byte) error {
		switch num {
		case 3: // lines
			lines = append(lines, v)
		case 4, 5: // event_metadata, stat_metadata
			id, name, err := metadataName(v)
			if num == 4 {
				eventNames[id] = name
			} else {
				statNames[id] = name
			}
			return err
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	var out []memEvent
	for _, line := range lines {
		var tsNs int64
		var events [][]byte
		err := eachField(line, func(num protowire.Number, x uint64, v []byte) error {
			switch num {
			case 3:
				tsNs = int64(x)
			case 4:
				events = append(events, v)
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
		for _, ev := range events {
			e := memEvent{order: order, chip: -1}
			order++
			var name string
			err := eachField(ev, func(num protowire.Number, x uint64, v []byte) error {
				switch num {
				case 1:
					name = eventNames[x]
				case 2:
					e.ps = int64(x)
				case 4:
					return e.stat(v, statNames)
				}
				return nil
			})
			if err != nil {
				return nil, err
			}
			if name != "MemoryAllocation" && name != "MemoryDeallocation" {
				continue
			}
			e.alloc = name == "MemoryAllocation"
			e.ps += tsNs * 1000
			out = append(out, e)
		}
	}
	return out, nil
}

// stat records one XStat that the test needs (integer stats only).
func (e *memEvent) stat(b []byte, statNames map[uint64]string) error {
	var name string
	var val int64
	err := eachField(b, func(num protowire.Number, x uint64, _ []byte) error {
		switch num {
		case 1:
			name = statNames[x]
		case 3, 4: // uint64_value, int64_value
			val = int64(x)
		}
		return nil
	})
	switch name {
	case "index_on_host":
		e.chip = val
	case "addr":
		e.addr = val
	case "requested_bytes":
		e.requested = val
	case "allocation_bytes":
		e.chunk = val
	case "bytes_allocated":
		e.inUse = val
	case "bytes_reserved":
		e.reserved = val
	case "bytes_available":
		e.available = val
	}
	return err
}
