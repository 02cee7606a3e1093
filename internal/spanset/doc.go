// Package spanset is the ordered set that holds the TPU runtime model's
// free memory: disjoint address ranges (spans) ordered by start address,
// each subtree knowing the largest span it holds. That answers the
// question the TPU runtime's placement asks of every allocation, "the
// highest free range that can hold n bytes" (allocator-spec §6.4, derived
// from the v6e recording in package tpurt), in O(log n), which an
// address-ordered list or a (size, address)-ordered set such as
// internal/freeset cannot.
//
// It is a B+tree whose nodes sit in slices, linked by index, with removed
// nodes recycled: a steady-state replay allocates nothing. It imports
// internal/prefetch and internal/hugemem only; tpurt imports it, and
// torchlike keeps in one the device memory it has mapped, for the
// validator's question whether a recorded address overlaps it
// (torchlike.Allocator.Overlaps).
//
// Every choice below was timed; docs/spanset-notes.md holds each
// measurement, kept or not, with its date and figures, and this overview
// quotes only what decided.
//
// # The tree
//
// A leaf holds up to 32 spans in two arrays, starts and sizes, so that a
// search by address reads only starts; an inner node holds up to 32
// children with a separator and the largest size under each. Nodes split
// in halves and are removed only when they empty, never merged, so the
// height is that of the largest the set has been. Every operation is
// O(log n) with at most one node's entries moved per level. It replaced
// an AVL tree, whose 25 levels at 10^6 spans made each search two dozen
// cache misses.
//
// Carve, the placement's whole step, finds the highest fit as HighestFit
// does and shrinks or removes that span through the finger (the leaf and
// position the search ended at) instead of searching again. A carve keeps
// the span's low end, so only sizes change on its path, and it mends the
// largest sizes of every level up to the root without testing whether
// each changed (the tests were mispredicted branches worth more than the
// stores). Join, a free, merges the range with the span that ends at its
// start and the one that begins at its end in one descent, and takes the
// general way (a search
// for each neighbour) only when one may lie in the leaf before or after
// (joinsApart): the place of 4.7 % of the frees at 10^6 live buffers
// (7.6 % at 10^3) is at a leaf's end, and most of those join nothing
// there.
//
// # What 10^6 live buffers cost
//
// With 10^6 live buffers (issue 15's live-set benchmarks) the TPU model's
// set holds about 300,000 spans in three inner levels after the paired
// window's 10^6 events and about 450,000 in four in the steady state,
// 8-16 MB of leaves. A free's address is any buffer's, so the leaf a Join
// reads is a random one; on the build machine a load that waits for the
// one before costs 6 ns within 1 MiB, 108 within 16 MiB and 175 within
// 256 MiB (internal/prefetch's BenchmarkRandomLines). The placement's
// nodes stay within a few MiB, but its descent is a chain of about ten
// dependent loads served by the second-level cache where at 10^3 they
// come from the first. Those two costs, not the instructions, are what
// the set pays at 10^6 beyond 10^3.
//
// # Asking ahead
//
// A free is known a few events before it happens (the replay's touch,
// strategies.Toucher), so the TPU model calls Prefetch with the buffer's
// address: it walks the inner nodes to the leaf a Join there would read
// and asks for the leaf's nine lines without waiting. It keeps the path
// in a ring of eight with the shape count (advanced by every split,
// removal of a node and Reset: a descent depends on the separators alone,
// so an unchanged shape leaves a path right whatever the leaves hold),
// and the Join at that address takes it instead of descending again,
// looking first at the entry after the one the last Join took, since
// Joins come in the order of their Prefetches. At 10^6 live buffers this
// took the model alone from 272-295 to 218-230 ns an event (2026-11-24).
// The TPU model does not ask ahead while the set holds fewer than 4,096
// spans, which the cache holds. The placement is not asked ahead: the walk to its leaf is the
// placement's own, and doing it early cost more than it saved.
//
// # Group maxima
//
// Each node keeps, in a header that fills its first cache line, the
// largest size of each group of eight entries (gmax: one line of sizes or
// maxima), and the slots past a node's count are empty (size 0, start or
// separator the largest int64), so that a group needs no count. At 10^6
// live buffers the span a carve shrinks is nearly always the largest of
// its leaf and of every node above, and each carve recomputed those
// maxima over lines HighestFit had not read (12 % of the model's time).
// Now a change rescans one group, the line just read, and takes the
// largest of four group maxima; HighestFit reads a node's group maxima
// and then one line of the group it chooses. A root leaf, a replay of few
// free ranges such as gpt-generate's, keeps none and scans its sizes from
// the last, since the top of the heap is most often the fit.
//
// # Scans without branches on the data
//
// Below the root, a descent by address (childAt) counts the group firsts
// not above the address and then the chosen group's entries by adding
// comparisons' results, in sums shaped as trees so that no comparison
// waits for another; a leaf ranks the same way (rankAll); HighestFit
// chooses a group by the highest bit of a mask of four comparisons and an
// entry by a run of conditional moves (lastFitBy). A scan's exit was a
// mispredicted branch at every level, which kept the processor from
// running ahead to the next load: the model alone went from 161 to 124
// cpu-ns an event at 10^6 and from 75 to 56 at 10^3 (2026-11-25).
// lastFitBy stays a call, since the compiler turns a conditional move
// that feeds a load's address into a branch.
//
// # Huge pages
//
// The leaves and inner nodes, once their arrays pass 4 MiB, start on a
// 2 MiB boundary of the Go heap with huge pages asked for (internal/
// hugemem), as do the TPU model's buffer records: in 4 KiB pages they are
// more pages than the processor's TLB holds, and a prefetch that misses
// the TLB waits for the page walk. The model alone at 10^6 live buffers
// costs 0.88-0.96 of what it did without (tpurt's BenchmarkLiveHugePages).
//
// # What did not pay
//
// Each of these was built and timed against the set above and is
// described in docs/spanset-notes.md: other node widths (leaves of 16 or
// 64, inner nodes of 16 to 128, 64 children in eight groups); a B*-tree's
// sharing between neighbours (it takes a level off only after the
// window); leaves of 32-bit offsets in granules (5 % at 10^6, a real
// replay 4 % slower, and a second tree to keep exact); 16-bit size codes;
// lastFitBy in AVX2 assembly (its stack arguments stood in the descent's
// chain of loads); the staircase of spans larger than every span above
// (three searches to keep it for the one it saves); the allocation's
// leaf asked for ahead; a walk in two stages; a directory from address
// buckets to leaves (no gain in the replay); and a set in address buckets
// under an implicit tree of largest sizes (slower at both sizes).
//
// Issue 15 asks that the cost per event at 10^6 live buffers be at most
// twice that at 10^3; with this set the TPU model's replay reads 2.4-2.7
// in the paired window and about 3.6 in the steady state.
package spanset
