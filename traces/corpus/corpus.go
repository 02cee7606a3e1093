// Package corpus is membench's embedded default corpus: real traces that
// `membench run` replays when no trace is named, so that the README's first
// command works on a fresh clone with nothing else on the machine. Origins
// and licences are in data/README.md beside the files.
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
// real traces in testdata/ (their importers' metadata kept) and from the
// generators.
var Entries = []Entry{
	{"resnet50-train", "resnet50-train.mbt.gz", "membench recorder (PyTorch 1.13 CPU)", "recorded by the membench team", "ResNet-50 training, batch 8, 3 steps"},
	{"gpt-train", "gpt-train.mbt.gz", "membench recorder (PyTorch 1.13 CPU)", "recorded by the membench team", "GPT 6x512 training, AdamW, 3 steps"},
	{"gpt-generate", "gpt-generate.mbt.gz", "membench recorder (PyTorch 1.13 CPU)", "recorded by the membench team", "GPT generation with a KV cache grown by concatenation"},
	{"encoder-infer-varlen", "encoder-infer-varlen.mbt.gz", "membench recorder (PyTorch 1.13 CPU)", "recorded by the membench team", "Transformer encoder serving requests of random batch and length"},
	{"cs336-lm-peak-probe", "cs336-lm-peak-probe.mbt.gz", "silmont2000/assignment2-systems@75d09aad", "MIT", "PyTorch CUDA snapshot, Transformer LM peak-memory probe"},
	{"opt125m-zo-finetune", "opt125m-zo-finetune.mbt.gz", "ZidongLiu/DeComFL@edd30e09", "Apache-2.0", "PyTorch CUDA snapshot, OPT-125m zeroth-order fine-tuning"},
	{"pangu-2.6b-somas", "pangu-2.6b-somas.mbt.gz", "cappadokes/idealloc@a21f84d5", "MIT", "MindSpore SOMAS tensor lifetimes of PanGu-alpha 2.6B (static plan)"},
	{"alexnet-train", "alexnet-train.mbt.gz", "Lin-Mao/allocatorSim@5718151c", "BSD-3-Clause", "AlexNet training step buffer lifetimes (allocatorSim input)"},
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
