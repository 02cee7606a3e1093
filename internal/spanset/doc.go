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
// hold). Measured in one process, alternating the two ways every 400,000
// events so that both see the same machine (2026-11-24, machine shared
// with two other benchmarking sessions, medians of 15–40 stretches):
// asking for the leaves ahead took the model's cost at 10^6 live buffers
// from 256–276 to 222–231 ns an event, and taking the kept paths from 243
// to 220; at 10^3 live buffers the set is small, is never asked ahead,
// and costs what it did (67–71 ns).
//
// What was tried and did not help: a binary search in nodes instead of a
// scan (a scan's loads do not wait for each other; kept); a HighestFit in
// two halves, its leaf asked for at the allocation and the allocation
// placed at the model's next call (10 ns more an event at 10^3, nothing
// at 10^6: the caller's work in between is too short to cover the wait);
// leaves of 16 or 64 spans and inner nodes of 16, 64 or 128 children
// (none better at both sizes); asking for a HighestFit's leaf sizes
// before scanning them; a four-way unrolled maximum. The highest fit's
// leaf cannot be asked for ahead, since the request's size is not known
// before it comes, and it remains the largest wait at 10^6.
package spanset
