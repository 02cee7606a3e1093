package prefetch

import (
	"math/rand/v2"
	"strconv"
	"testing"
	"unsafe"

	"membench/internal/hugemem"
)

// BenchmarkRandomLines measures what a cache line read at random costs on
// the machine at hand, the figure that bounds every model's cost at 10^6
// live blocks (docs/spanset-notes.md cites it), in an array of mb MiB in
// huge pages (hugemem.Grow), filled before the timer starts so that no
// page is first touched while timed. ns/line is the time per line read:
//
//   - mode=chase: each line read names the next (a random cycle through
//     every line), so that each load waits for the one before: the
//     latency of a miss, as a descent through nodes out of the cache
//     pays it at each level.
//   - mode=load/per=k: k random lines an iteration, read as they come:
//     independent loads, as many in flight as the processor finds.
//   - mode=ahead8/per=k: the same lines, each asked for with Line eight
//     iterations before it is read, as the replay's touches ask for a
//     free's lines: the throughput of lines asked for ahead.
func BenchmarkRandomLines(b *testing.B) {
	for _, mb := range []int{1, 16, 256} {
		lines := mb << 20 / 64
		mem := hugemem.Grow([][8]int64(nil), lines)[:lines]
		rng := rand.New(rand.NewPCG(1, uint64(mb)))
		// A random cycle: line perm[i] names line perm[i+1].
		perm := rng.Perm(lines)
		for i, p := range perm {
			mem[p][0] = int64(perm[(i+1)%lines])
		}
		b.Run("mb="+strconv.Itoa(mb)+"/mode=chase", func(b *testing.B) {
			x := int64(perm[0])
			for range b.N {
				x = mem[x][0]
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N), "ns/line")
			if x < 0 {
				b.Fatal("negative index")
			}
		})
		for _, ahead := range []int{0, 8} {
			for _, per := range []int{1, 16} {
				mode := "load"
				if ahead > 0 {
					mode = "ahead" + strconv.Itoa(ahead)
				}
				b.Run("mb="+strconv.Itoa(mb)+"/mode="+mode+"/per="+strconv.Itoa(per), func(b *testing.B) {
					idx := make([]int32, (b.N+ahead)*per)
					for i := range idx {
						idx[i] = int32(rng.IntN(lines))
					}
					var sum int64
					b.ResetTimer()
					for i := range b.N {
						if ahead > 0 {
							for _, x := range idx[(i+ahead)*per : (i+ahead+1)*per] {
								Line(unsafe.Pointer(&mem[x]))
							}
						}
						for _, x := range idx[i*per : (i+1)*per] {
							sum += mem[x][0]
						}
					}
					b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*per), "ns/line")
					if sum < 0 {
						b.Fatal("negative sum")
					}
				})
			}
		}
	}
}
