// Package pickle decodes Python pickles that hold plain data: None, bools,
// ints, floats, strings, bytes, lists, tuples, dicts and sets. It is a
// safe subset of Python's unpickler for protocols 0 to 5: every opcode that
// would look up a global, call a function or build a class instance
// (GLOBAL, STACK_GLOBAL, REDUCE, BUILD, INST, OBJ, NEWOBJ, NEWOBJ_EX,
// EXT1/2/4, PERSID, BINPERSID) and the out-of-band buffer opcodes
// (NEXT_BUFFER, READONLY_BUFFER) are refused with an error naming the
// opcode and its byte offset. Nothing in a pickle is ever executed.
//
// Decoded values are:
//
//	None                  nil
//	bool                  bool
//	int                   int64, or *big.Int when it does not fit
//	float                 float64
//	str                   string (protocol-0/1 STRING opcodes too; bytes as-is)
//	bytes, bytearray      []byte
//	list, set, frozenset  *List
//	tuple                 Tuple
//	dict                  *Dict (insertion order kept)
//
// Containers shared through the pickle memo stay shared (the same *List or
// *Dict pointer), and a pickle can describe a list that contains itself, so
// code walking a decoded value must not assume it is a tree.
//
// # Streaming and limits
//
// Decode runs a Machine: the pickle's opcodes are executed once, in
// order, on a stack of compact values (Val), so the time is linear in the
// input. Nothing in it recurses, and everything it keeps is bounded by
// Limits, because a pickle is a program and a few bytes of one can ask
// for unbounded work: a tuple key nested 40 deep used to take 2^40 steps
// to hash, 5 MB of nesting overflowed the Go stack, and a 1 MB gzip file
// could grow the stack or the memo until memory ran out. Nesting depth,
// stack length, memo entries, text bytes and generic items each have a
// limit, and exceeding one is an *Error wrapping ErrLimit that names the
// limit and the byte offset. Tuple keys are encoded in one linear pass,
// with their own depth and length bounds.
//
// A Builder lets a caller that knows the schema of the pickle take the
// containers it needs as they are built (the machine tells it where each
// new container will be stored: the pending key above a dict's MARK, or
// the list below it), and leave the others unbuilt (NodeSkip): that is how
// package snapshot reads PyTorch snapshots without building the object
// graph, and without reading stack frames at all.
//
// # Imports
//
// It imports only the standard library: the unpickler is a format reader
// with no knowledge of PyTorch; torchlike/snapshot builds a snapshot on it
// through the Builder hook.
//
// # Writing
//
// Encode writes the same value model back as a protocol-4 pickle limited
// to the opcodes PyTorch's MemoryViz reads, so that `membench export`
// (through torchlike/snapshot) writes snapshots that both Python and the
// viewer open. pickletest, the writer's former home, is now a thin
// wrapper kept for tests.
package pickle
