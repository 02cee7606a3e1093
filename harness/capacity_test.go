package harness

import (
	"strings"
	"testing"

	"membench/strategies"
	"membench/traces/corpus"
)

// TestMinCapacityOnCorpus checks the capacity search's promise on every
// corpus trace, for each strategy and device family: the answer is at
// least the peak live bytes, a replay at it has no OOM, and a replay one
// granule below runs out of memory.
func TestMinCapacityOnCorpus(t *testing.T) {
	for _, name := range corpus.Names() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			minCapacityOnTrace(t, name)
		})
	}
}

// minCapacityOnTrace is TestMinCapacityOnCorpus on one trace.
func minCapacityOnTrace(t *testing.T, name string) {
	src, err := ResolveTrace(name)
	if err != nil {
		t.Fatal(err)
	}
	src.Cache(DefaultCacheEvents)
	for _, devName := range []string{"a100-80g", "tpu-v4"} {
		for _, spec := range []string{"jax", "tf", "torch", "torch:expandable_segments=true"} {
			if testing.Short() && spec != "torch" {
				continue
			}
			dev := device(t, devName)
			if dev.Kind == strategies.TPU && strings.HasPrefix(spec, "torch") {
				continue // not modelled: PyTorch on a TPU is PyTorch/XLA
			}
			c, err := MinCapacity(src, spec, dev)
			if err != nil {
				t.Fatal(err)
			}
			if c.Unreachable || c.MinCapacity < c.PeakLive || c.MinCapacity%c.Granularity != 0 {
				t.Errorf("%s/%s/%s: min capacity %d, peak live %d, granularity %d", name, devName, spec, c.MinCapacity, c.PeakLive, c.Granularity)
				continue
			}
			oom := func(capacity int64) int64 {
				d := dev
				d.Total, d.Capacity, d.Free = capacity+c.Overhead, capacity, capacity // the card holds the context or reserve too
				r, _ := src.Open()
				res, err := Replay(name, r, spec, d, Options{Samples: 1})
				if err != nil {
					t.Fatal(err)
				}
				return res.OOMCount
			}
			if c.MinCard() != c.MinCapacity+dev.Total-dev.Capacity || c.Overhead <= 0 {
				t.Errorf("%s/%s/%s: card %d for capacity %d on a family with %d B overhead", name, devName, spec, c.MinCard(), c.MinCapacity, dev.Total-dev.Capacity)
			}
			if n := oom(c.MinCapacity); n != 0 {
				t.Errorf("%s/%s/%s: %d OOMs at the minimum capacity %d", name, devName, spec, n, c.MinCapacity)
			}
			if n := oom(c.MinCapacity - c.Granularity); n == 0 {
				t.Errorf("%s/%s/%s: fits one granule below the minimum capacity %d", name, devName, spec, c.MinCapacity)
			}
		}
	}
}

func TestShard(t *testing.T) {
	srcs := []*Source{{Name: "a"}, {Name: "b"}, {Name: "c"}}
	jobs := Jobs(srcs, []strategies.Device{device(t, "a100-80g"), device(t, "tpu-v4")}, []string{"torch", "jax", "tf"})
	seen := map[int]int{}
	for k := 1; k <= 4; k++ {
		sh, err := ParseShard(string(rune('0'+k)) + "/4")
		if err != nil {
			t.Fatal(err)
		}
		for _, j := range sh.Select(jobs) {
			seen[j.Index]++
		}
	}
	if len(seen) != len(jobs) {
		t.Errorf("shards cover %d of %d jobs", len(seen), len(jobs))
	}
	for i, n := range seen {
		if n != 1 {
			t.Errorf("job %d in %d shards", i, n)
		}
	}
	for _, bad := range []string{"0/4", "5/4", "1", "a/b", "1/0"} {
		if _, err := ParseShard(bad); err == nil {
			t.Errorf("ParseShard(%q) accepted", bad)
		}
	}
}

// TestSweepAllocationsPerReplay: a replay's heap allocations do not depend
// on how many replays a sweep runs.
func TestSweepAllocationsPerReplay(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector makes sync.Pool drop items at random, and a replay's allocations with them")
	}
	src, err := ResolveTrace("gpt-train")
	if err != nil {
		t.Fatal(err)
	}
	src.Cache(DefaultCacheEvents)
	perReplay := func(n int) float64 {
		specs := make([]string, n)
		for i := range specs {
			specs[i] = "torch"
		}
		jobs := Jobs([]*Source{src}, []strategies.Device{device(t, "a100-80g")}, specs)
		return testing.AllocsPerRun(3, func() {
			if _, err := RunJobs(jobs, 2, func(j Job) (*Result, error) { return ReplayJob(j, Options{Samples: 1}) }, nil); err != nil {
				t.Fatal(err)
			}
		}) / float64(n)
	}
	small, large := perReplay(2), perReplay(16)
	if large > small*1.1 {
		t.Errorf("allocations per replay grow with the sweep: %.0f at 2 replays, %.0f at 16", small, large)
	}
	t.Logf("%.0f allocations per replay at 2 replays, %.0f at 16 (gpt-train has 11060 events)", small, large)
}

// TestShardFromEnv: --shard auto reads the shard the engine assigned.
func TestShardFromEnv(t *testing.T) {
	cases := []struct {
		env  map[string]string
		want Shard
		err  string
	}{
		{map[string]string{"MEMBENCH_SHARD": "2/3", "JOB_COMPLETION_INDEX": "0"}, Shard{2, 3}, ""},
		{map[string]string{"JOB_COMPLETION_INDEX": "0", "MEMBENCH_SHARDS": "4"}, Shard{1, 4}, ""},
		{map[string]string{"JOB_COMPLETION_INDEX": "3", "JOB_COMPLETIONS": "4"}, Shard{4, 4}, ""},
		{map[string]string{"JOB_COMPLETION_INDEX": "4", "JOB_COMPLETIONS": "4"}, Shard{}, "do not name a shard"},
		{map[string]string{"JOB_COMPLETION_INDEX": "1"}, Shard{}, "not the number of shards"},
		{map[string]string{"CI_NODE_INDEX": "1", "CI_NODE_TOTAL": "2"}, Shard{1, 2}, ""},
		{map[string]string{"CI_NODE_INDEX": "0", "CI_NODE_TOTAL": "2"}, Shard{}, "1-based"},
		{map[string]string{"CIRCLE_NODE_INDEX": "1", "CIRCLE_NODE_TOTAL": "2"}, Shard{2, 2}, ""},
		{map[string]string{"BUILDKITE_PARALLEL_JOB": "0", "BUILDKITE_PARALLEL_JOB_COUNT": "5"}, Shard{1, 5}, ""},
		{map[string]string{}, Shard{}, "no shard in the environment"},
		{map[string]string{"MEMBENCH_SHARD": "3/2"}, Shard{}, "bad shard"},
		// Two schedulers: agreeing is one shard, disagreeing an error.
		{map[string]string{"JOB_COMPLETION_INDEX": "0", "MEMBENCH_SHARDS": "2", "CI_NODE_INDEX": "1", "CI_NODE_TOTAL": "2"}, Shard{1, 2}, ""},
		{map[string]string{"JOB_COMPLETION_INDEX": "1", "MEMBENCH_SHARDS": "2", "CI_NODE_INDEX": "1", "CI_NODE_TOTAL": "2"}, Shard{}, "two different shards"},
		{map[string]string{"CIRCLE_NODE_INDEX": "0", "CIRCLE_NODE_TOTAL": "3", "BUILDKITE_PARALLEL_JOB": "0", "BUILDKITE_PARALLEL_JOB_COUNT": "2"}, Shard{}, "two different shards"},
	}
	for _, tc := range cases {
		got, _, err := ShardFromEnv(func(k string) string { return tc.env[k] })
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%v: error %v, want one saying %q", tc.env, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("%v: %v, %v; want %v", tc.env, got, err, tc.want)
		}
	}
}

// TestTraceName: a trace file is named in results by its base name less
// its trace extensions; other dots stay.
func TestTraceName(t *testing.T) {
	for path, want := range map[string]string{
		"../shared/traces/lifetimes/pangu-2.6b-somas.csv": "pangu-2.6b-somas",
		"x/opt125m-zo-finetune.pickle":                    "opt125m-zo-finetune",
		"run.csv.gz":                                      "run",
		"p/tf.xplane.pb":                                  "tf",
		"c.mbt.gz":                                        "c",
		"v1.2":                                            "v1.2",
	} {
		if got := traceName(path); got != want {
			t.Errorf("traceName(%q) = %q, want %q", path, got, want)
		}
	}
}
