// Package sandboxtest holds what tests of contained commands share.
package sandboxtest

import (
	"os"
	"path/filepath"
	"testing"
)

// ReachableDir returns a fresh directory every user may traverse (but not
// list or write), as a service's work dir is in production (/tmp): a
// command's fresh uid must reach its workspace through it, which a
// t.TempDir (mode 0700) does not allow.
func ReachableDir(tb testing.TB) string {
	tb.Helper()
	dir, err := filepath.EvalSymlinks(tb.TempDir())
	if err != nil {
		tb.Fatal(err)
	}
	for _, d := range []string{filepath.Dir(dir), dir} {
		if err := os.Chmod(d, 0o711); err != nil {
			tb.Fatal(err)
		}
	}
	return dir
}
