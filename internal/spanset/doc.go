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
// internal/prefetch only; tpurt imports it.
//
// # Large sets
//
// With 10^6 live buffers (issue 15's live-set benchmark) the TPU model's
// set holds about 406,000 spans in four inner levels and 17,000 leaves of
// 528 bytes, 9 MB of leaves. The leaf a Join or a HighestFit ends in is a
// random one: a free's address is any buffer's, and the highest fit of a
// request of tens of KiB is a median 134,000 spans below the top. On the
// 2-core build machine (a virtual machine) a load from a random place in
// 16 MB or more costs 160–400 ns, against 20–120 ns in 4 MB, so each of
// those leaves is a wait for main memory, and every mispredicted branch
// (a scan's exit) keeps the processor from running ahead to the next one.
//
// A free is known a few events before it happens (the replay's touch,
// strategies.Toucher), so the model asks for its leaf ahead: Prefetch
// walks the inner nodes to the leaf a Join at an address will read and
// asks the processor for that leaf's cache lines without waiting. It
// keeps the path it found, with the last three others, and the Join at
// that address takes it instead of descending again, unless an inner node
// has split or gone since (the shape count, which every split, removal of
// a node and Reset advances: a descent's result depends on the separators
// alone, so an unchanged shape leaves the path right whatever the leaves
// hold). Measured in one process, alternating the TPU model's touch with
// and without the leaf request every stretch of events so that both see
// the same machine (2026-11-24, a machine shared with two other
// benchmarking sessions, medians of 25–48 stretches): at 10^6 live
// buffers the model alone (internal/livebench's loop) went from 272–295
// to 218–230 ns an event, and the whole replay
// (harness.BenchmarkReplayLive's trace) from 386–449 to 297–358; at 10^3
// live buffers the set is small, is never asked ahead and costs what it
// did (67–73 ns alone, 76–83 in a replay). Of the gain, the kept paths
// were about 10 % (243 to 220 ns an event alone) and asking for the leaf
// the rest. Runs of separate processes vary by 20–80 % on that machine
// and did not resolve it: BenchmarkReplayLive's x-live1k-cpu for jax on
// tpu-v5e was 2.4–4.5 before and 2.8–5.0 after (medians 3.36 and 3.34, 8
// interleaved runs each). Issue 15's ≤ 2 is not met: the replay around
// the model grows too, from about 20–40 to 70–135 ns an event (the BFC's
// replay less its model alone, same day), which leaves the TPU model at
// most 1.5–2 times its cost at 10^3 (100–150 ns an event at 10^6), and a
// B+tree whose placement waits for one random leaf and whose free asks
// for another costs about three times (200–230 ns alone when the machine
// is quiet).
//
// What was tried and did not help: a HighestFit in two halves, its leaf
// asked for at the allocation and the allocation placed at the model's
// next call (10 ns more an event at 10^3, nothing at 10^6: the caller's
// work in between is too short to cover the wait); leaves of 16 or 64
// spans and inner nodes of 16, 64 or 128 children (none better at both
// sizes); asking for a HighestFit's leaf sizes before scanning them; a
// four-way unrolled maximum. Huge pages were not tried again: in a
// pointer chase over 64 MB they cut a load from 237 to 172 ns, and the
// previous attempt in the model found nothing. The highest fit's leaf
// cannot be asked for ahead, since the request's size is not known
// before it comes, and it remains the largest wait at 10^6.
package spanset
