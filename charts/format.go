package charts

import (
	"fmt"
	"strconv"
)

func fmtFloat(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }

// fmtBytes writes a byte count with a binary prefix, as the page's
// JavaScript helper does: 512 B, 1.5 KiB, 702.5 MiB, 78 GiB.
func fmtBytes(n float64) string {
	units := []string{"B", "KiB", "MiB", "GiB", "TiB", "PiB"}
	i := 0
	neg := n < 0
	if neg {
		n = -n
	}
	for n >= 1024 && i < len(units)-1 {
		n /= 1024
		i++
	}
	s := ""
	switch {
	case i == 0:
		s = fmt.Sprintf("%.0f %s", n, units[i])
	case n >= 100:
		s = fmt.Sprintf("%.0f %s", n, units[i])
	case n >= 10:
		s = fmt.Sprintf("%.1f %s", n, units[i])
	default:
		s = fmt.Sprintf("%.2f %s", n, units[i])
	}
	if neg {
		s = "-" + s
	}
	return s
}

// round4 keeps four decimals: layout positions are percentages, and a
// ten-thousandth of a percent is far below a pixel.
func round4(f float64) float64 {
	return float64(int64(f*1e4+0.5)) / 1e4
}

func fmtFixed(f float64, prec int) string { return strconv.FormatFloat(f, 'f', prec, 64) }
