package main

import (
	"fmt"

	"github.com/urfave/cli/v2"
)

// genCommand is built with the generators (traces/gen).
func genCommand() *cli.Command {
	return &cli.Command{Name: "gen", Usage: "generate a workload trace (not built yet)",
		Action: func(*cli.Context) error { return fmt.Errorf("traces gen: not built yet") }}
}
