// Package fuzzbound runs one input of a fuzz target under a time and a
// memory bound, so that a fuzzer finds inputs that hang a decoder or make
// it allocate without end, not only inputs that crash it.
//
// Use it around the body of a fuzz function:
//
//	f.Fuzz(func(t *testing.T, data []byte) {
//		fuzzbound.Check(t, func() {
//			r, err := traces.NewNativeReader("fuzz", bytes.NewReader(data))
//			...
//		})
//	})
//
// Check fails the test when one run of the body takes longer than
// Bounds.Time (wall clock) or allocates more than Bounds.Alloc bytes (the
// growth of runtime.MemStats.TotalAlloc, every byte allocated, freed or
// not). Both measures are process-wide and noisy (the garbage collector,
// other tests, a loaded machine), so a run over a bound is repeated, up to
// Runs times, and the test fails only when every run exceeded a bound: a
// hostile input is slow or hungry every time, a scheduling hiccup is not.
// The body must therefore be safe to run more than once (fuzz bodies
// normally are). Under the race detector the time bound is multiplied by
// RaceTimeFactor.
//
// A run that goes far past the bounds would never return to be measured:
// a watchdog panics, which ends the process (the fuzzing engine records
// the input as a crasher), when a run takes more than HardFactor times
// the time bound or allocates more than HardFactor times the memory bound.
//
// It imports only the standard library (runtime/metrics for the
// watchdog), so that any package's fuzz tests can use it.
package fuzzbound
