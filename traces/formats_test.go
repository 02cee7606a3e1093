package traces

import (
	"bytes"
	"strings"
	"testing"
)

// TestDetectNewFormats: detection of the binary format, the lifetime
// tables, STAlloc logs and pprof profiles, and content close to them that
// is none of them.
func TestDetectNewFormats(t *testing.T) {
	bin := toBinary(t, Meta{{"k", "v"}}, []Event{{Op: OpAlloc, ID: 1, Size: 8, Time: NoTime}}, WriterOptions{})
	prof := pprofBytes(t, testJAXProfile(t), false)
	long := strings.Repeat("12 345 6789\n", 100) // longer than the sniffed prefix
	cases := []struct {
		name, in, format string
	}{
		{"binary", string(bin), FormatBinary},
		{"binary bad version", BinaryMagic + "\x07", FormatBinary},
		{"lifetimes csv", "id,lower,upper,size\n0,0,5,8\n", FormatLifetimesCSV},
		{"lifetimes csv crlf", "id,lower,upper,size\r\n", FormatLifetimesCSV},
		{"lifetimes solution", "id,lower,upper,size,offset\n", FormatLifetimesCSV},
		{"lifetimes header only", "id,lower,upper,size", FormatLifetimesCSV},
		{"allocatorsim", "0 381 92928\n1 379 256\n", FormatAllocatorSim},
		{"allocatorsim blank lines", "\n0\t381 92928\r\n\n1 379 256", FormatAllocatorSim},
		{"allocatorsim long", long, FormatAllocatorSim},
		{"stalloc", "1 0x7f0000000000 4096 0\n0 0x7f0000000000\n", FormatSTAlloc},
		{"stalloc decimal", "1 140000 8 7\n0 140000 8 7\n", FormatSTAlloc},
		{"stalloc free first", "0 7fab\n", FormatSTAlloc},
		{"stalloc negative stream", "1 16 8 -1\n", FormatSTAlloc},
		{"pprof", string(prof), FormatJAXPprof},

		{"csv other header", "id,lower,upper\n", ""},
		{"sim then text", "0 1 2\n0 1 2\nhello\n", ""},
		{"mixed sim and stalloc", "0 1 2\n0 0x10\n", ""},
		{"five fields", "1 2 3 4 5\n", ""},
		{"stalloc malloc 2 fields", "1 0x10\n", ""},
		{"stalloc 3 fields hex", "1 0x10 8\n", ""},
		{"stalloc hex size", "1 0x10 0x8 0\n", ""},
		{"stalloc op 2", "2 0x10 8 0\n", ""},
		{"blank lines", "\n\n \n", ""},
		{"one long line", strings.Repeat("1", 600), ""},
		{"newline then text", "\nhello world\n", ""},
		{"protobuf not pprof", "\x0a\x04\x08\x01\x10\x02\x12\x02\x08\x05", ""},
	}
	for _, c := range cases {
		for _, gz := range []bool{false, true} {
			in := []byte(c.in)
			if gz {
				in = gzipped(t, in)
			}
			format, _, err := Detect(bytes.NewReader(in))
			if format != c.format {
				t.Errorf("%s (gzip %v): Detect = %q, %v; want %q", c.name, gz, format, err, c.format)
			}
			if c.format == "" && (err == nil || !strings.Contains(err.Error(), "unknown trace format")) {
				t.Errorf("%s (gzip %v): err = %v", c.name, gz, err)
			}
		}
	}
}
