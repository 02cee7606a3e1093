// Package pickletest writes pickles, for tests: membench reads pickles (a
// PyTorch memory snapshot is one) and never writes one, but its tests need
// recordings they can shape, and round trips through the unpickler. It is
// test support in the manner of net/http/httptest: no production code
// imports it.
//
// It imports internal/pickle for the value model and the opcodes.
package pickletest
