// Package sharedtraces finds the team's trace collection, ../shared/traces
// beside the repository, for tests that read real recordings.
//
// Recordings fetched from public repositories are read where they are kept
// and never copied into the project (their licences and origins are in
// ../shared/traces/README.md). A test that needs one asks Path for it and is
// skipped, with a message naming the missing file, on a machine without
// the collection; so `go test ./...` passes on a fresh clone alone and
// tests the real files wherever they are present (as .ci/run has them).
//
// It imports nothing of ours and is imported only by tests and the
// project's scripts (scripts/answers), like the standard library's
// internal/testenv.
package sharedtraces
