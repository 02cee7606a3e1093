package sharedtraces

import (
	"os"
	"path/filepath"
	"testing"
)

// Dir returns the directory of the shared trace collection
// (../shared/traces beside the module root), or "" when it is absent. The
// module root is found from the working directory, which `go test` sets to
// the package's directory.
func Dir() string {
	wd, err := os.Getwd()
	if err != nil {
		return ""
	}
	for d := wd; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			dir := filepath.Join(filepath.Dir(d), "shared", "traces")
			if st, err := os.Stat(dir); err == nil && st.IsDir() {
				return dir
			}
			return ""
		}
		if filepath.Dir(d) == d {
			return ""
		}
	}
}

// Path returns the path of rel (such as
// "pytorch-snapshots/opt125m-zo-finetune.pickle") in the shared collection,
// and skips tb when the file is not there.
func Path(tb testing.TB, rel string) string {
	tb.Helper()
	dir := Dir()
	if dir == "" {
		tb.Skipf("../shared/traces is not beside the repository: the real recording %s is not available, test skipped", rel)
	}
	p := filepath.Join(dir, filepath.FromSlash(rel))
	if _, err := os.Stat(p); err != nil {
		tb.Skipf("real recording %s is not in ../shared/traces (%v): test skipped", rel, err)
	}
	return p
}
