package charts

import (
	"strconv"
)

func fmtFloat(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }

// round4 keeps four decimals: layout positions are percentages, and a
// ten-thousandth of a percent is far below a pixel.
func round4(f float64) float64 {
	return float64(int64(f*1e4+0.5)) / 1e4
}

func fmtFixed(f float64, prec int) string { return strconv.FormatFloat(f, 'f', prec, 64) }
