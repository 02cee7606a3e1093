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
