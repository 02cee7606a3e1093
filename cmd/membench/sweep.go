package main

import (
	"fmt"

	"github.com/urfave/cli/v2"
)

// sweepCommand is not built yet; see the open issues.
func sweepCommand() *cli.Command {
	return &cli.Command{
		Name:  "sweep",
		Usage: "run a strategy over a grid of knob values (not built yet)",
		Action: func(*cli.Context) error {
			return fmt.Errorf("sweep: not built yet")
		},
	}
}
