package pickle

// For the external tests (package pickle_test), which may import
// pickletest, a package that imports this one.
var (
	Expected = expected
	Eq       = eq
	DictOf   = dict
	ListOf   = list
)
