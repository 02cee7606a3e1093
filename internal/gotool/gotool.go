// Package gotool finds the binaries that `go tool NAME` runs for the
// tools go.mod pins (benchstat), so that a test running one dozens of
// times starts it directly: starting the go command for each run cost
// most of those tests' time, and the binary is the same one.
package gotool

import (
	"bytes"
	"fmt"
	"os/exec"
	"strings"
	"sync"
)

var (
	mu    sync.Mutex
	found = map[string]result{}
)

type result struct {
	path string
	err  error
}

// Path is the binary `go tool name` runs (from `go tool -n name`, which
// builds it if need be), looked up once per process.
func Path(name string) (string, error) {
	mu.Lock()
	defer mu.Unlock()
	if r, ok := found[name]; ok {
		return r.path, r.err
	}
	var se bytes.Buffer
	cmd := exec.Command("go", "tool", "-n", name)
	cmd.Stderr = &se
	out, err := cmd.Output()
	r := result{path: strings.TrimSpace(string(out))}
	if err != nil {
		r = result{err: fmt.Errorf("go tool -n %s: %v\n%s", name, err, se.String())}
	}
	found[name] = r
	return r.path, r.err
}
