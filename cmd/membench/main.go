package main

import (
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	// Interrupted, a command leaves no temporary output behind.
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	go func() {
		s := <-sig
		abortOutputs()
		fmt.Fprintln(os.Stderr, "membench:", s)
		os.Exit(130)
	}()
	if err := run(os.Stdout, os.Stderr, os.Args); err != nil {
		var code exitCode
		if errors.As(err, &code) {
			os.Exit(int(code))
		}
		fmt.Fprintln(os.Stderr, "membench:", err)
		os.Exit(1)
	}
}
