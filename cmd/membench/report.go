package main

import (
	"fmt"

	"github.com/urfave/cli/v2"
)

// reportCommand is not built yet; see the open issues.
func reportCommand() *cli.Command {
	return &cli.Command{
		Name:  "report",
		Usage: "write a self-contained HTML report with charts (not built yet)",
		Action: func(*cli.Context) error {
			return fmt.Errorf("report: not built yet")
		},
	}
}
