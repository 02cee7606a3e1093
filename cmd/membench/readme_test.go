package main

import (
	"os"
	"strconv"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// TestReadmeJobManifest: the Kubernetes Job in the README is valid YAML,
// an Indexed Job whose container sets MEMBENCH_SHARDS to its completions
// and runs --shard auto, as ShardFromEnv documents.
func TestReadmeJobManifest(t *testing.T) {
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(b), "```yaml\n")
	if !ok {
		t.Fatal("no yaml block in the README")
	}
	block, _, ok := strings.Cut(rest, "```")
	if !ok {
		t.Fatal("unterminated yaml block")
	}
	var job struct {
		Kind string
		Spec struct {
			Completions    int
			CompletionMode string `yaml:"completionMode"`
			Template       struct {
				Spec struct {
					Containers []struct {
						Env     []struct{ Name, Value string }
						Command []string
					}
				}
			}
		}
	}
	if err := yaml.Unmarshal([]byte(block), &job); err != nil {
		t.Fatalf("README's Job manifest: %v", err)
	}
	if job.Kind != "Job" || job.Spec.CompletionMode != "Indexed" || len(job.Spec.Template.Spec.Containers) != 1 {
		t.Fatalf("manifest %+v", job)
	}
	c := job.Spec.Template.Spec.Containers[0]
	shards := ""
	for _, e := range c.Env {
		if e.Name == "MEMBENCH_SHARDS" {
			shards = e.Value
		}
	}
	if shards == "" || shards != strconv.Itoa(job.Spec.Completions) {
		t.Errorf("MEMBENCH_SHARDS %q, completions %d", shards, job.Spec.Completions)
	}
	if cmd := strings.Join(c.Command, " "); !strings.Contains(cmd, "--shard auto") || !strings.Contains(cmd, "$JOB_COMPLETION_INDEX") {
		t.Errorf("command %q", cmd)
	}
}

// TestReviewRefusals: options that make no sense for their input are
// refused, naming the option.
func TestReviewRefusals(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"validate", "--device-index", "-1", "x"}, "--device-index -1"},
		{[]string{"traces", "compile", "--alignment", "3", "gpt-train", t.TempDir() + "/c.txt"}, "power of two"},
		{[]string{"export", "--format", "memory-viz", "--trace", "gpt-train", "--strategy", "torch", "--strategy", "jax", "--out", t.TempDir() + "/e.pickle"}, "given 2 times"},
		{[]string{"run", "--colocate", "gpt-train@jax", "--colocate", "gpt-train@torch", "--format", "json"}, "not supported"},
	} {
		if _, _, err := runCLI(t, c.args...); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v, want an error saying %q", c.args, err, c.want)
		}
	}
}

// TestReadmeHeadingsOnce: every heading of the README appears once. An
// edit that spliced a section in at the wrong place (a search for
// "### Sweeps" that found "### Sweeps past one machine" first) copied
// seven sections of it twice over, and nothing else noticed.
func TestReadmeHeadingsOnce(t *testing.T) {
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	inCode := false
	for i, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "```") {
			inCode = !inCode
		}
		if inCode || !strings.HasPrefix(line, "#") {
			continue
		}
		if first, ok := seen[line]; ok {
			t.Errorf("README line %d repeats the heading %q of line %d", i+1, line, first)
			continue
		}
		seen[line] = i + 1
	}
}
