// Package cpuclock reads the CPU time the process has used, which the
// speed benchmarks report beside wall time (cpu-ns/event, cpu-ns/entry):
// on a machine that other jobs share, a benchmark's wall time counts the
// time it waited for a core, and its CPU time does not.
package cpuclock
