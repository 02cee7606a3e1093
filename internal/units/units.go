package units

import (
	"fmt"
	"strconv"
)

// Auto, as the decimals of Bytes, keeps three significant digits: two
// decimals below 10, one below 100, none above.
const Auto = -1

// binaryPrefixes are the units Bytes scales to, each 1024 times the last.
var binaryPrefixes = []string{"B", "KiB", "MiB", "GiB", "TiB", "PiB"}

// Bytes formats n bytes with the largest binary prefix that leaves at
// least 1 before the point (up to PiB), a space and the unit: "512 B",
// "1.50 KiB". A count below 1 KiB is a whole number of bytes; a scaled one
// has decimals digits after the point, or three significant digits if
// decimals is Auto. A negative n is formatted as -n with a minus sign.
func Bytes(n float64, decimals int) string {
	sign := ""
	if n < 0 {
		sign, n = "-", -n
	}
	i := 0
	for n >= 1024 && i < len(binaryPrefixes)-1 {
		n /= 1024
		i++
	}
	switch {
	case i == 0:
		decimals = 0
	case decimals != Auto:
	case n >= 100:
		decimals = 0
	case n >= 10:
		decimals = 1
	default:
		decimals = 2
	}
	return sign + strconv.FormatFloat(n, 'f', decimals, 64) + " " + binaryPrefixes[i]
}

// Seconds formats a duration in seconds for people: µs below a
// millisecond, ms below a second, else seconds; 0 as "0". The table of
// `membench run` and `membench tune` share it.
func Seconds(v float64) string {
	switch {
	case v == 0:
		return "0"
	case v < 1e-3:
		return fmt.Sprintf("%.1f µs", v*1e6)
	case v < 1:
		return fmt.Sprintf("%.2f ms", v*1e3)
	}
	return fmt.Sprintf("%.3f s", v)
}
