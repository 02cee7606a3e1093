package pickletest

import (
	"io"

	"membench/internal/pickle"
)

// Encode writes v as a pickle: it is pickle.Encode, kept here so that
// tests written against this package go on working now that the writer
// is production code (membench export writes snapshots with it).
func Encode(w io.Writer, v any) error { return pickle.Encode(w, v) }
