package corpus

import (
	"os"
	"strings"
	"testing"

	"membench/traces"
)

// TestCorpus opens every entry, checks its events and that its peak live
// bytes are the figures the origins' READMEs give, and that every entry
// that is not generated has its licence beside it.
func TestCorpus(t *testing.T) {
	want := map[string]int64{
		"resnet50-train": 948391936, "gpt-train": 686272540, "gpt-generate": 139275288,
		"encoder-infer-varlen": 393957864,
	}
	readme, err := os.ReadFile("data/README.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range Entries {
		r, err := Open(e.Name)
		if err != nil {
			t.Fatal(err)
		}
		s, err := traces.Summarize(e.Name, r)
		r.Close()
		if err != nil {
			t.Fatalf("%s: %v", e.Name, err)
		}
		if s.Allocs == 0 {
			t.Errorf("%s: no allocations", e.Name)
		}
		if w, ok := want[e.Name]; ok && s.PeakLiveBytes != w {
			t.Errorf("%s: peak live %d, its origin says %d", e.Name, s.PeakLiveBytes, w)
		}
		if !strings.Contains(string(readme), "| "+e.Name+" |") {
			t.Errorf("%s is not in data/README.md", e.Name)
		}
		if e.Licence != "generated" && !strings.HasPrefix(e.Licence, "recorded") {
			if _, err := os.Stat("data/" + e.Name + ".LICENSE"); err != nil {
				t.Errorf("%s: licence file missing: %v", e.Name, err)
			}
		}
	}
	if _, err := Open("nope"); err == nil || !strings.Contains(err.Error(), "resnet50-train") {
		t.Errorf("unknown name: %v", err)
	}
}
