package main

import (
	"fmt"

	"github.com/urfave/cli/v2"
)

// compareCommand is not built yet; see the open issues.
func compareCommand() *cli.Command {
	return &cli.Command{
		Name:  "compare",
		Usage: "compare benchfmt results as benchstat does (not built yet)",
		Action: func(*cli.Context) error {
			return fmt.Errorf("compare: not built yet")
		},
	}
}
