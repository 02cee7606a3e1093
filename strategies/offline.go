package strategies

// Lifetime is one allocation of a whole trace as an offline planner sees
// it: the bytes requested and the indexes of the events that allocated
// and freed it (for an allocation never freed, the trace's last event).
// Event indexes are the logical clock of allocator-spec §6.2: every event
// advances it, and an allocation is live on [Start, End], both inclusive,
// so a buffer freed before another is allocated never overlaps it.
type Lifetime struct {
	Size, Start, End int64
}

// Offline is a model that is not an allocator deciding as requests come
// but a plan made with the whole trace in view: a static planner such as
// XLA's buffer assignment, which knows every buffer's lifetime before the
// first one is allocated. The harness reads the whole trace first, calls
// Plan once with every allocation's Lifetime in the order of the trace's
// allocations (the replay's k-th Malloc is the k-th Lifetime), and then
// replays the trace through the model as through any Allocator. Its
// results are a bound to compare the allocators with, not an allocator's;
// a model declaring Offline says so in its Notes.
type Offline interface {
	Plan(lifetimes []Lifetime) error
}
