#!/usr/bin/env bash
# Rebuilds traces/corpus/data from the team's own recordings in
# testdata/recorded and from the generators (recordings fetched from public
# repositories are never embedded; they stay in ../shared/traces), in membench's native binary format, gzip-compressed. Run from
# the repository root: bash traces/corpus/make-corpus.sh
set -euo pipefail
out=traces/corpus/data
mb() { go run ./cmd/membench "$@"; }
conv() { mb traces convert --format binary --gzip "$1" "$out/$2.mbt.gz"; }
conv testdata/recorded/resnet50-train.csv.gz resnet50-train
conv testdata/recorded/gpt-train.csv.gz gpt-train
conv testdata/recorded/gpt-generate.csv.gz gpt-generate
conv testdata/recorded/encoder-infer-varlen.csv.gz encoder-infer-varlen
gen() { name=$1; shift; mb traces gen --format binary --gzip --out "$out/$name.mbt.gz" "$@"; }
gen gen-gpt2-medium-train transformer-train --param model=gpt2-medium --param batch=4 --param seq=512 --param dtype=bf16 --param steps=2
gen gen-llm-serve-paged llm-serve --param model=gpt2-small --param requests=12 --param kv=paged
gen gen-resnet50-train cnn-train --param depth=resnet50 --param batch=32 --param steps=2
