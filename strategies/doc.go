// Package strategies is the vocabulary every other package shares and
// nothing else. It holds the Allocator contract the framework models
// implement and the optional capabilities a model may declare beyond it
// (Layouter for state maps, Defragmenter for relocation counters, Placer
// and Tracer for exports of a replay's decisions, Noter
// for the model's own assumptions), the Validator a framework's house
// declares for its real recordings, the Device presets (each figure with
// its source or labelled an assumption) and the Memory a replay draws
// from, which counts device calls and their modelled cost, the statistics
// types (OOM, Segment, Block), and the parsing of strategy specs such as
// `torch:expandable_segments=true`.
//
// It imports no other package of membench, so that torchlike, bfc,
// tflike, jaxlike and platform depend only on it, and the harness uses a
// model, once built, through these declarations alone.
package strategies
