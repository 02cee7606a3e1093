// Package snaptest writes PyTorch memory snapshots, for tests: membench
// reads snapshots (torchlike/snapshot) and never writes one, but the tests
// of the reader, the warm-start reconstruction and the validator need
// recordings they can shape. It is test support in the manner of
// net/http/httptest: no production code imports it.
//
// It imports torchlike/snapshot (the Snapshot it writes), torchlike (the
// action names) and the pickle writer of internal/pickle/pickletest.
package snaptest
