package corpus

import (
	"bytes"
	"embed"
	"fmt"
	"strings"

	"membench/traces"
)

//go:embed data
var files embed.FS

// Entry is one trace of the corpus.
type Entry struct {
	Name, File, Source, Licence, Description string
}

// Entries lists the corpus in its fixed order. Every file is membench's
// native binary format, gzip-compressed, made by make-corpus.sh from the
// team's own recordings in testdata/recorded (their importers' metadata
// kept) and from the generators. Recordings fetched from public
// repositories are never embedded: they are read in place from
// ../shared/traces by path (--trace FILE).
var Entries = []Entry{
	{"resnet50-train", "resnet50-train.mbt.gz", "membench recorder (PyTorch 1.13 CPU)", "recorded by the membench team", "ResNet-50 training, batch 8, 3 steps"},
	{"gpt-train", "gpt-train.mbt.gz", "membench recorder (PyTorch 1.13 CPU)", "recorded by the membench team", "GPT 6x512 training, AdamW, 3 steps"},
	{"gpt-generate", "gpt-generate.mbt.gz", "membench recorder (PyTorch 1.13 CPU)", "recorded by the membench team", "GPT generation with a KV cache grown by concatenation"},
	{"encoder-infer-varlen", "encoder-infer-varlen.mbt.gz", "membench recorder (PyTorch 1.13 CPU)", "recorded by the membench team", "Transformer encoder serving requests of random batch and length"},
	{"gen-gpt2-medium-train", "gen-gpt2-medium-train.mbt.gz", "membench generator", "generated", "GPT-2 medium training, batch 4, seq 512, bf16, Adam, 2 steps"},
	{"gen-llm-serve-paged", "gen-llm-serve-paged.mbt.gz", "membench generator", "generated", "GPT-2 small serving 12 requests, continuous batching, paged KV cache"},
	{"gen-resnet50-train", "gen-resnet50-train.mbt.gz", "membench generator", "generated", "ResNet-50 training, batch 32, SGD momentum, 2 steps"},
}

// Lookup finds an entry by name.
func Lookup(name string) (Entry, bool) {
	for _, e := range Entries {
		if e.Name == name {
			return e, true
		}
	}
	return Entry{}, false
}

// Names lists the corpus names in order.
func Names() []string {
	var ns []string
	for _, e := range Entries {
		ns = append(ns, e.Name)
	}
	return ns
}

// Open opens a corpus trace by name.
func Open(name string) (traces.Reader, error) {
	e, ok := Lookup(name)
	if !ok {
		return nil, fmt.Errorf("no corpus trace %q (corpus: %s)", name, strings.Join(Names(), ", "))
	}
	b, err := files.ReadFile("data/" + e.File)
	if err != nil {
		return nil, err
	}
	return traces.OpenReader(e.Name, bytes.NewReader(b), traces.DefaultOpenOptions)
}
