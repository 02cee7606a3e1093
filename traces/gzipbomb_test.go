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
	// 1 GiB of content, a megabyte or so of gzip: 32 gzip members of
	// 32 MiB each (a gzip file is a series of members; Go's reader, like
	// gunzip, reads them all as one content). The reader must stop in the
	// first member, past the 16 MiB slack; the other 31 stand for the
	// rest of the gigabyte, which a reader that did not stop would read
	// (and exceed the bounds). Compressing the gigabyte as one member
	// took three seconds; one member repeated is the same content.
	member := func(head string) []byte {
		var b bytes.Buffer
		zw, _ := gzip.NewWriterLevel(&b, gzip.BestCompression)
		zw.Write([]byte(head))
		for range 512 {
			zw.Write([]byte(line))
		}
		zw.Close()
		return b.Bytes()
	}
	bomb := append(member("membench-trace 1\n"), bytes.Repeat(member(""), 31)...)
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
