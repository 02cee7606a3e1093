package snapshot

import (
	"encoding/json"
	"errors"
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
	v, err := jsonValue(dec, 0)
	if err != nil {
		return nil, fmt.Errorf("snapshot: json: %w", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("snapshot: json: unexpected data after the top-level value (offset %d)", dec.InputOffset())
	}
	return FromValue(v)
}

const maxJSONDepth = 10000

// jsonValue converts the next JSON value to the pickle value model.
func jsonValue(dec *json.Decoder, depth int) (any, error) {
	if depth > maxJSONDepth {
		return nil, errors.New("nesting too deep")
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
				v, err := jsonValue(dec, depth+1)
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
			for dec.More() {
				v, err := jsonValue(dec, depth+1)
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
	case string, bool, nil:
		return t, nil
	}
	return nil, fmt.Errorf("offset %d: unexpected token %v", dec.InputOffset(), tok)
}
