package snapshot

import (
	"encoding/json"
	"fmt"
	"io"
	"math/big"
	"strconv"
	"strings"

	"membench/internal/pickle"
)

// DecodeJSON reads a snapshot saved as JSON (json.dump of the dict that
// _snapshot() returns; tuples become lists). Objects keep their key order
// and integers stay exact.
func DecodeJSON(r io.Reader) (*Snapshot, error) {
	dec := json.NewDecoder(r)
	dec.UseNumber()
	lim := DefaultLimits.Pickle
	st := &jsonState{dec: dec, items: lim.MaxItems, text: lim.MaxText, depth: lim.MaxDepth}
	v, err := st.value(0, jsonTop)
	if err != nil {
		return nil, fmt.Errorf("snapshot: json: %w", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("snapshot: json: unexpected data after the top-level value (offset %d)", dec.InputOffset())
	}
	return FromValue(v)
}

// maxJSONNumber bounds the length of a number literal: every number of a
// snapshot fits in 64 bits (20 digits) or is a float's shortest repr, and
// parsing a long one exactly costs time quadratic in its length.
const maxJSONNumber = 40

// jsonState converts JSON to the pickle value model within the same
// limits as the pickle machine (nesting depth, generic items, text).
type jsonState struct {
	dec   *json.Decoder
	items int
	text  int64
	depth int
}

// spend counts n bytes of a string read, kept or skipped, against the
// decoded-text limit, as the pickle decoder counts every string it
// decodes: skipped strings were free, and a JSON snapshot of 100 MiB of
// frames or metadata was read where its pickle was refused.
func (st *jsonState) spend(n int) error {
	st.text -= int64(n)
	if st.text < 0 {
		return fmt.Errorf("offset %d: more than %d bytes of strings: %w", st.dec.InputOffset(), DefaultLimits.Pickle.MaxText, ErrLimit)
	}
	return nil
}

func (st *jsonState) count() error {
	st.items--
	if st.items < 0 {
		return fmt.Errorf("offset %d: more than %d values: %w", st.dec.InputOffset(), DefaultLimits.Pickle.MaxItems, ErrLimit)
	}
	return nil
}

// What a JSON value is to the snapshot, so that values it never reads
// are skipped token by token instead of built (a file of unknown keys
// must not cost memory).
type jsonRole int

const (
	jsonTop    jsonRole = iota // the top-level dict
	jsonSchema                 // inside segments or device_traces: the schema's keys only
	jsonAll                    // allocator_settings: every key (its own limits apply)
)

// jsonSchemaKeys are the keys of segments, blocks and trace entries that
// the snapshot reads (FromValue); "frames" and every other key are skipped.
var jsonSchemaKeys = map[string]bool{
	"device": true, "address": true, "total_size": true, "stream": true, "segment_type": true,
	"allocated_size": true, "active_size": true, "requested_size": true, "blocks": true,
	"is_expandable": true, "segment_pool_id": true, "size": true, "state": true,
	"action": true, "addr": true, "time_us": true, "device_free": true,
}

// keep reports the role of the value under key in a dict of role r, and
// false when the snapshot never reads it.
func (r jsonRole) keep(key string) (jsonRole, bool) {
	switch r {
	case jsonTop:
		switch key {
		case "segments", "device_traces":
			return jsonSchema, true
		case "allocator_settings":
			return jsonAll, true
		}
		return r, false
	case jsonSchema:
		return r, jsonSchemaKeys[key]
	}
	return r, true
}

// frameTags is what skip learns of the strings it reads past: the union
// of their frame tags, and how many items the value's top level holds.
type frameTags struct {
	tag   uint8
	items int
}

// skip consumes the next JSON value without building it, within the same
// depth bound; its tokens still count against the value limit, so time
// stays bounded by it.
func (st *jsonState) skip(depth int, ft *frameTags) error {
	dec := st.dec
	open := 0
	for {
		if depth+open > st.depth {
			return fmt.Errorf("offset %d: nesting deeper than %d: %w", dec.InputOffset(), st.depth, ErrLimit)
		}
		tok, err := dec.Token()
		if err != nil {
			if err == io.EOF {
				return io.ErrUnexpectedEOF
			}
			return err
		}
		switch t := tok.(type) {
		case json.Delim:
			if t == '{' || t == '[' {
				if open == 1 {
					ft.items++
				}
				open++
				if err := st.count(); err != nil {
					return err
				}
			} else {
				open--
			}
		case string:
			if err := st.spend(len(t)); err != nil {
				return err
			}
			if open == 1 {
				ft.items++
			}
			ft.tag |= frameTag([]byte(t))
		case json.Number:
			if len(t) > maxJSONNumber {
				return fmt.Errorf("offset %d: number of %d characters longer than the limit of %d: %w", dec.InputOffset(), len(t), maxJSONNumber, ErrLimit)
			}
		}
		if open == 0 {
			return nil
		}
	}
}

// value converts the next JSON value.
func (st *jsonState) value(depth int, role jsonRole) (any, error) {
	dec := st.dec
	if depth > st.depth {
		return nil, fmt.Errorf("offset %d: nesting deeper than %d: %w", dec.InputOffset(), st.depth, ErrLimit)
	}
	if err := st.count(); err != nil {
		return nil, err
	}
	tok, err := dec.Token()
	if err != nil {
		if err == io.EOF {
			return nil, io.ErrUnexpectedEOF
		}
		return nil, err
	}
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '{':
			d := pickle.NewDict()
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					return nil, err
				}
				k, ok := kt.(string)
				if !ok {
					return nil, fmt.Errorf("offset %d: object key is not a string", dec.InputOffset())
				}
				if err := st.spend(len(k)); err != nil {
					return nil, err
				}
				sub, keep := role.keep(k)
				if !keep {
					var ft frameTags
					if err := st.skip(depth+1, &ft); err != nil {
						return nil, err
					}
					if role == jsonSchema && k == "frames" {
						// Frames are not built, only classified (as
						// the pickle decoder does).
						d.Set(k, classOfTags(ft.items > 0, ft.tag))
					}
					continue
				}
				v, err := st.value(depth+1, sub)
				if err != nil {
					return nil, err
				}
				d.Set(k, v)
			}
			if _, err := dec.Token(); err != nil {
				return nil, err
			}
			return d, nil
		case '[':
			l := &pickle.List{}
			elem := role
			if role == jsonTop {
				elem = jsonSchema // a bare list of segments (memory_snapshot())
			}
			for dec.More() {
				v, err := st.value(depth+1, elem)
				if err != nil {
					return nil, err
				}
				l.Items = append(l.Items, v)
			}
			if _, err := dec.Token(); err != nil {
				return nil, err
			}
			return l, nil
		}
		return nil, fmt.Errorf("offset %d: unexpected %v", dec.InputOffset(), t)
	case json.Number:
		s := string(t)
		if len(s) > maxJSONNumber {
			return nil, fmt.Errorf("offset %d: number %s...(%d characters) longer than the limit of %d: %w", dec.InputOffset(), s[:20], len(s), maxJSONNumber, ErrLimit)
		}
		if !strings.ContainsAny(s, ".eE") {
			if n, err := strconv.ParseInt(s, 10, 64); err == nil {
				return n, nil
			}
			if z, ok := new(big.Int).SetString(s, 10); ok {
				return z, nil
			}
		}
		f, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return nil, fmt.Errorf("offset %d: bad number %q", dec.InputOffset(), s)
		}
		return f, nil
	case string:
		if err := st.spend(len(t)); err != nil {
			return nil, err
		}
		return t, nil
	case bool, nil:
		return t, nil
	}
	return nil, fmt.Errorf("offset %d: unexpected token %v", dec.InputOffset(), tok)
}
