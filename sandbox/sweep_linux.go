package sandbox

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// maxSweepDepth bounds how deep sweepFiles follows world-writable
// directories below a root.
const maxSweepDepth = 8

// sweepFiles removes everything uid owns in the roots and in the
// world-writable directories below them (others it could not have written
// to), never following a link, and returns how many entries it removed.
// The uid's processes must be dead: then nothing changes under the sweep.
// A directory of uid goes whole, whatever it holds.
func sweepFiles(uid uint32, roots []string) (int, error) {
	if uid == 0 {
		return 0, errors.New("sweep: refusing to remove root's files")
	}
	n := 0
	var errs []error
	var walk func(dir string, depth int)
	walk = func(dir string, depth int) {
		entries, err := os.ReadDir(dir)
		if err != nil {
			if !errors.Is(err, fs.ErrNotExist) {
				errs = append(errs, err)
			}
			return
		}
		for _, e := range entries {
			p := filepath.Join(dir, e.Name())
			var st syscall.Stat_t
			if err := syscall.Lstat(p, &st); err != nil {
				continue
			}
			if st.Uid == uid {
				if err := os.RemoveAll(p); err != nil {
					errs = append(errs, err)
				} else {
					n++
				}
				continue
			}
			if st.Mode&syscall.S_IFMT == syscall.S_IFDIR && st.Mode&0o002 != 0 && depth < maxSweepDepth {
				walk(p, depth+1)
			}
		}
	}
	seen := map[string]bool{}
	for _, r := range roots {
		real, err := filepath.EvalSymlinks(r)
		if err != nil || seen[real] {
			continue
		}
		seen[real] = true
		walk(real, 0)
	}
	return n, errors.Join(errs...)
}
