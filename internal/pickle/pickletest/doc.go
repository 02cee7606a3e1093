// Package pickletest is the pickle writer as tests have used it: a thin
// wrapper of pickle.Encode, which was promoted from here to production
// code when `membench export` began writing PyTorch memory snapshots.
// New code calls pickle.Encode directly.
//
// It imports internal/pickle only.
package pickletest
