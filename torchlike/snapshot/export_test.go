package snapshot

// For the external tests (package snapshot_test), which may import
// snaptest, the writer of snapshots, a package that imports this one.
var (
	OpenSnapshot     = openSnapshot
	RealSnapPath     = realSnapPath
	LoadSnap         = loadSnap
	SharedEntrySeeds = sharedEntrySeeds
	WriteJSON        = toJSON
)
