// Command membench replays allocation traces through models of the JAX,
// TensorFlow and PyTorch accelerator allocators and reports peak reserved
// memory, waste, OOMs and device calls as benchstat-compatible results.
//
// Usage:
//
//	membench run [--trace PATH|NAME]... [--strategy SPEC]... [--device NAME]... [--out FILE] [--format F] [--shard K/N]
//	membench validate [--device-index N]... [--capacity SIZE] SNAPSHOT.pickle...
//	membench sweep --strategy NAME [--param key=v1,v2]... [run's flags]
//	membench capacity [run's flags]
//	membench compare [--col KEY] [--row KEY] [--filter EXPR] [--format text|csv|json] FILE...
//	membench traces list | show NAME|PATH | convert IN OUT | gen KIND
//	membench report [--trace ...] [--strategy ...] [--device ...] [--results FILE]... --out report.html
//
// See README.md for the strategy and device specs.
package main

import (
	"errors"
	"fmt"
	"os"
)

func main() {
	if err := run(os.Stdout, os.Stderr, os.Args); err != nil {
		var code exitCode
		if errors.As(err, &code) {
			os.Exit(int(code))
		}
		fmt.Fprintln(os.Stderr, "membench:", err)
		os.Exit(1)
	}
}
