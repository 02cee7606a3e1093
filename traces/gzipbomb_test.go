package traces

import (
	"bytes"
	"compress/gzip"
	"errors"
	"strings"
	"testing"
	"time"

	"membench/internal/fuzzbound"
)

// TestGzipBomb: content that grows a thousandfold under gzip (a
// decompression bomb: a megabyte standing for a gigabyte) is refused
// after at most gzipRatioSlack bytes, with an error naming the file;
// content within the bound reads whole.
func TestGzipBomb(t *testing.T) {
	line := "m " + strings.Repeat("x", 64<<10) + "\n"         // compresses ~1000x
	plain := "membench-trace 1\n" + strings.Repeat(line, 128) // 8 MiB: under the slack
	var b bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&b, gzip.BestCompression)
	zw.Write([]byte("membench-trace 1\n"))
	for range 16 << 10 { // 1 GiB of content, a megabyte or so of gzip
		zw.Write([]byte(line))
	}
	zw.Close()
	bomb := b.Bytes()
	fuzzbound.Within(2*time.Second, 256<<20).Check(t, func() {
		r, err := OpenReader("bomb.gz", bytes.NewReader(bomb), DefaultOpenOptions)
		if err == nil {
			_, err = ReadAll(r)
		}
		if err == nil || !errors.Is(err, errGzipBomb) || !strings.Contains(err.Error(), "bomb.gz") {
			t.Fatalf("err = %v", err)
		}
	})
	small := gzipped(t, []byte(plain)) // under the slack, any ratio
	r, err := OpenReader("small.gz", bytes.NewReader(small), DefaultOpenOptions)
	if err != nil {
		t.Fatal(err)
	}
	evs, err := ReadAll(r)
	if err != nil || len(evs) != 128 {
		t.Errorf("%d events, %v", len(evs), err)
	}
}
