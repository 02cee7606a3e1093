// Package corpus is membench's embedded default corpus: the team's own
// recordings and generated traces that `membench run` replays when no trace
// is named, so that the README's first command works on a fresh clone with
// nothing else on the machine. Origins are in data/README.md beside the
// files. Recordings fetched from public repositories are never embedded;
// they are replayed in place from ../shared/traces by path.
//
// It imports only traces.
package corpus
