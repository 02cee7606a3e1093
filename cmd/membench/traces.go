package main

import (
	"fmt"

	"github.com/urfave/cli/v2"
)

// tracesCommand is not built yet; see the open issues.
func tracesCommand() *cli.Command {
	return &cli.Command{
		Name:  "traces",
		Usage: "list, show, convert and generate traces (not built yet)",
		Action: func(*cli.Context) error {
			return fmt.Errorf("traces: not built yet")
		},
	}
}
