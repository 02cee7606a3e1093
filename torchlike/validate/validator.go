package validate

import (
	"bytes"
	"fmt"
	"io"

	"membench/strategies"
	"membench/torchlike/snapshot"
	"membench/traces"
)

// Snapshots is the validator of PyTorch memory snapshots that `membench
// validate` offers: a pickle written by torch.cuda.memory._dump_snapshot,
// or the JSON dump of the same dict, recognised from the content as traces
// recognises it.
var Snapshots = strategies.Validator{
	Name: "PyTorch memory snapshot (torch.cuda.memory._dump_snapshot pickle, or its JSON dump), through the torch model",
	Match: func(content []byte) bool {
		f, _, err := traces.Detect(bytes.NewReader(content))
		return err == nil && (f == traces.FormatSnapshotPickle || f == traces.FormatSnapshotJSON)
	},
	Validate: func(name string, r io.Reader, opts strategies.ValidateOptions, w io.Writer) (int, error) {
		if len(opts.Allocators) > 0 {
			return 0, fmt.Errorf("--allocator names an allocator of a profile; a PyTorch snapshot has one per device (--device-index)")
		}
		snap, err := snapshot.Decode(r)
		if err != nil {
			return 0, err
		}
		reps, err := Validate(snap, Options{Devices: opts.Devices, Capacity: opts.Capacity, Total: opts.Total})
		if err != nil {
			return 0, err
		}
		disagree := 0
		for _, rep := range reps {
			rep.WriteReport(w, name)
			if !rep.Agree() {
				disagree++
			}
		}
		return disagree, nil
	},
}
