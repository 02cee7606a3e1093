package charts

import (
	"bytes"
	"fmt"
	"io"
	"math"

	"golang.org/x/perf/benchfmt"

	"membench/internal/benchtab"
)

// ReadResults reads benchmark results in the Go benchmark format
// (`membench run` and `membench capacity` output, or anything benchstat
// reads) with golang.org/x/perf/benchfmt. A result's /trace=, /device=
// and /strategy= name parts place it in the report. A syntax error is
// returned with its file and line.
func ReadResults(r io.Reader, name string) ([]Measurement, error) {
	end := benchtab.NewEndCheck(r)
	br := benchfmt.NewReader(end, name)
	var out []Measurement
	for br.Scan() {
		switch rec := br.Result().(type) {
		case *benchfmt.SyntaxError:
			return out, rec
		case *benchfmt.Result:
			if base, _ := rec.Name.Parts(); string(base) == "Placement" {
				// `membench capacity`'s allocator limit for placement
				// alone is no card: the page draws cards only.
				continue
			}
			// The reader reuses rec on the next Scan: copy what we keep.
			m := Measurement{Name: string(rec.Name.Full()), File: name}
			_, m.Line = rec.Pos()
			_, parts := rec.Name.Parts()
			for _, p := range parts {
				k, v, ok := bytes.Cut(bytes.TrimPrefix(p, []byte("/")), []byte("="))
				if !ok {
					continue
				}
				switch string(k) {
				case "trace":
					m.Trace = string(v)
				case "device":
					m.Device = string(v)
				case "strategy":
					m.Strategy = string(v)
				}
			}
			for _, v := range rec.Values {
				// Keep the file's own unit: benchunit would rename
				// a *-sec or *-MB unit.
				u, x := v.Unit, v.Value
				if v.OrigUnit != "" {
					u, x = v.OrigUnit, v.OrigValue
				}
				if math.IsNaN(x) || math.IsInf(x, 0) {
					// benchfmt reads NaN and ±Inf, which no
					// measurement is; the page would draw
					// nothing or nonsense for them.
					return out, &benchfmt.SyntaxError{FileName: name, Line: m.Line, Msg: fmt.Sprintf("%s: %v is not a finite number", u, x)}
				}
				m.Values = append(m.Values, Value{Unit: u, Value: x})
			}
			out = append(out, m)
		}
	}
	if err := br.Err(); err != nil {
		if long := end.TooLong(name, err); long != nil {
			return out, long
		}
		return out, fmt.Errorf("%s: %w", name, err)
	}
	if err := end.Err(name); err != nil {
		return out, err
	}
	if len(out) == 0 {
		// benchfmt skips lines it does not recognise, so a file of
		// anything else reads as empty: say so rather than draw nothing.
		return out, fmt.Errorf("%s: no benchmark results in it (want membench run, sweep or capacity output)", name)
	}
	return out, nil
}
