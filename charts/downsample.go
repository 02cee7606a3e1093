package charts

import "membench/harness"

// MaxPoints bounds the points of one timeline series on the page. Each
// point costs about 20 bytes of JSON; the harness keeps up to twice its
// Options.Samples (2048 by default).
const MaxPoints = 1000

// Downsample returns at most limit samples: runs of k = ⌈len/limit⌉
// neighbouring samples merged into one that starts where the run starts
// and holds the run's maximum live and maximum reserved bytes. The
// harness timeline is already a bucketed maximum, so the result still is:
// every peak survives, and the maximum of each series is kept exactly
// (an average or LTTB would shave a one-event spike). s is not modified;
// when it is short enough it is returned as it is.
func Downsample(s []harness.Sample, limit int) []harness.Sample {
	if limit <= 0 || len(s) <= limit {
		return s
	}
	k := (len(s) + limit - 1) / limit
	out := make([]harness.Sample, 0, (len(s)+k-1)/k)
	for i := 0; i < len(s); i += k {
		m := s[i]
		for _, x := range s[i+1 : min(i+k, len(s))] {
			m.Live = max(m.Live, x.Live)
			m.Reserved = max(m.Reserved, x.Reserved)
		}
		out = append(out, m)
	}
	return out
}
