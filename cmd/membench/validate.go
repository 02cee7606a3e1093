package main

import "github.com/urfave/cli/v2"

func validateCommand() *cli.Command {
	return &cli.Command{Name: "validate", Usage: "compare torchlike with a PyTorch memory snapshot's recorded segment events"}
}
