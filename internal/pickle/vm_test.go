package pickle

import (
	"bytes"
	"fmt"
	"math/big"
	"strings"
	"testing"
)

// TestObjectSweep runs enough objects through the object table for its
// slots to be swept and reused: values still on the stack, in the memo or
// in containers keep theirs.
func TestObjectSweep(t *testing.T) {
	var p bytes.Buffer
	p.WriteString("\x80\x02]\x94(") // the list (memo 0), MARK
	big9 := "\x8a\x09\x01\x02\x03\x04\x05\x06\x07\x08\x09"
	const n = 20000
	for i := 0; i < n; i++ {
		s := fmt.Sprintf("b%d", i)
		p.WriteString(big9 + "0") // a big int, dropped
		p.WriteString("C" + string(rune(len(s))) + s)
		if i%1000 == 0 {
			p.WriteString("r" + string([]byte{byte(i / 1000), 0, 0, 1})) // LONG_BINPUT 2^24+k
		}
		p.WriteString(")0]0}0") // containers, dropped
		long := strings.Repeat("s", internMax+1) + s
		p.WriteString("X" + string([]byte{byte(len(long)), 0, 0, 0}) + long + "0")
	}
	p.WriteString("e") // APPENDS
	for k := 0; k < n/1000; k++ {
		p.WriteString("j" + string([]byte{byte(k), 0, 0, 1}) + "a") // LONG_BINGET, APPEND
	}
	p.WriteString(big9 + "a.")
	v, err := Decode(bytes.NewReader(p.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	items := v.(*List).Items
	if len(items) != n+n/1000+1 {
		t.Fatalf("%d items", len(items))
	}
	for i := 0; i < n; i++ {
		if b, ok := items[i].([]byte); !ok || string(b) != fmt.Sprintf("b%d", i) {
			t.Fatalf("item %d: %v", i, items[i])
		}
	}
	for k := 0; k < n/1000; k++ {
		if b, ok := items[n+k].([]byte); !ok || string(b) != fmt.Sprintf("b%d", 1000*k) {
			t.Fatalf("memo item %d: %v", k, items[n+k])
		}
	}
	want, _ := new(big.Int).SetString("090807060504030201", 16)
	if z, ok := items[len(items)-1].(*big.Int); !ok || z.Cmp(want) != 0 {
		t.Fatalf("big: %v", items[len(items)-1])
	}
}
