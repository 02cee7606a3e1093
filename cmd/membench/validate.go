package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/urfave/cli/v2"

	bfcvalidate "membench/bfc/validate"
	"membench/strategies"
	"membench/torchlike/validate"
	tpuvalidate "membench/tpurt/validate"
	"membench/traces"
)

// validators are the recordings `membench validate` reads, each declared
// by its framework's house; every one whose Match accepts a file's content
// validates what it knows in it (a profile's BFC allocators and its TPU
// chips are different houses' to check).
var validators = []strategies.Validator{validate.Snapshots, bfcvalidate.Profiles, tpuvalidate.Profiles}

func validateCommand() *cli.Command {
	var kinds []string
	for _, v := range validators {
		kinds = append(kinds, "  "+v.Name)
	}
	return &cli.Command{
		Name:      "validate",
		Usage:     "replay a real allocator's recording through the matching model and compare the model's decisions with the recorded ones",
		ArgsUsage: "RECORDING...",
		Description: "Exit status 0 only when, for every device validated, every decision the recording determines agrees\n" +
			"exactly with the model's. The recording's kind is detected from its content (gzip is transparent):\n" +
			strings.Join(kinds, "\n"),
		Flags: []cli.Flag{
			&cli.IntSliceFlag{Name: "device-index", Usage: "validate only device `N` (repeatable; default: every device; in a profile, the TPU chip N or GPU_N_bfc)"},
			&cli.StringSliceFlag{Name: "allocator", Usage: "in a profile, validate only the allocator `NAME` (repeatable; e.g. GPU_0_bfc, gpu_host_bfc, TPU:0; default: every allocator)"},
			&cli.StringFlag{Name: "capacity", Usage: "in a PyTorch snapshot, the device memory the allocator could obtain, e.g. 40GiB, when the recording holds no out-of-memory event (default: unlimited; a profile records its allocators' limits)"},
			&cli.StringFlag{Name: "total", Usage: "in a PyTorch snapshot, the GPU's total memory, e.g. 80GiB: per_process_memory_fraction is a fraction of it, and an expandable segment reserves 1.125 times it (default: the larger of --capacity and what a recorded out-of-memory event shows the allocator could obtain)"},
		},
		Action: func(c *cli.Context) error {
			if c.Args().Len() == 0 {
				return fmt.Errorf("validate: name at least one recording")
			}
			var opts strategies.ValidateOptions
			if c.IsSet("device-index") {
				opts.Devices = c.IntSlice("device-index")
				for _, d := range opts.Devices {
					if d < 0 {
						return fmt.Errorf("--device-index %d: want a device number, 0 or more", d)
					}
				}
			}
			if c.IsSet("allocator") {
				opts.Allocators = c.StringSlice("allocator")
			}
			var err error
			if opts.Capacity, err = positiveSize(c, "capacity", " (leave it out for unlimited)"); err != nil {
				return err
			}
			if opts.Total, err = positiveSize(c, "total", ""); err != nil {
				return err
			}
			failed := 0
			for _, path := range c.Args().Slice() {
				n, err := validateFile(path, opts, c.App.Writer)
				if err != nil {
					return err
				}
				failed += n
			}
			if failed > 0 {
				fmt.Fprintf(c.App.ErrWriter, "membench validate: %d device(s) disagree\n", failed)
				return exitCode(1)
			}
			return nil
		},
	}
}

// validateFile opens path (gzip or plain), picks the validator its content
// matches and runs it; it returns how many devices disagree.
func validateFile(path string, opts strategies.ValidateOptions, w io.Writer) (int, error) {
	var src io.Reader = os.Stdin
	if path != "-" {
		f, err := os.Open(path)
		if err != nil {
			return 0, err
		}
		defer f.Close()
		src = f
	}
	br, closeInput, err := traces.OpenInput(path, src)
	if err != nil {
		return 0, err
	}
	defer closeInput()
	var r io.Reader = br
	peek, err := br.Peek(512)
	if err != nil && err != io.EOF && err != bufio.ErrBufferFull {
		return 0, fmt.Errorf("%s: %w", path, err)
	}
	// A copy: Peek's bytes are the reader's buffer, which reading the
	// content for the first validator overwrites.
	head := bytes.Clone(peek)
	// Every matching validator reads the same content: keep it, so each
	// gets its own reader. Recordings that match are small next to memory
	// (profiles and snapshots are bounded by their readers' limits).
	matched, disagree := 0, 0
	var content []byte
	for _, v := range validators {
		if !v.Match(head) {
			continue
		}
		if content == nil {
			if content, err = io.ReadAll(r); err != nil {
				return 0, fmt.Errorf("%s: %w", path, err)
			}
		}
		n, err := v.Validate(path, bytes.NewReader(content), opts, w)
		if errors.Is(err, strategies.ErrNothingToValidate) {
			continue
		}
		if err != nil {
			return 0, fmt.Errorf("%s: %w", path, err)
		}
		matched++
		disagree += n
	}
	if matched > 0 {
		return disagree, nil
	}
	if content != nil {
		return 0, fmt.Errorf("%s: nothing membench can validate in it (no allocator it models was chosen)", path)
	}
	var kinds []string
	for _, v := range validators {
		kinds = append(kinds, v.Name)
	}
	return 0, fmt.Errorf("%s: not a recording membench can validate (it reads: %s)", path, strings.Join(kinds, "; "))
}

// positiveSize reads the memory size flag name, 0 when it is not set; a
// size of 0 or less is refused, with hint.
func positiveSize(c *cli.Context, name, hint string) (int64, error) {
	if !c.IsSet(name) {
		return 0, nil
	}
	n, err := strategies.ParseMemorySize(c.String(name))
	if err == nil && n <= 0 {
		err = fmt.Errorf("must be more than 0 bytes%s", hint)
	}
	if err != nil {
		return 0, fmt.Errorf("--%s %q: %w", name, c.String(name), err)
	}
	return n, nil
}
