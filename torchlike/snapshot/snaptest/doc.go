// Package snaptest writes PyTorch memory snapshots shaped for tests: the
// production writer (snapshot.Value, snapshot.EncodePickle, used by
// `membench export`) writes empty stack frames, and the tests of the
// reader, the warm-start reconstruction and the validator need recordings
// whose entries carry frames of a given class (an empty_cache, a release
// in malloc's retry). It is test support in the manner of
// net/http/httptest: no production code imports it.
//
// It imports torchlike/snapshot (the Snapshot it writes and its writer)
// and internal/pickle.
package snaptest
