//go:build linux

package workspace

import (
	"io/fs"
	"syscall"
)

// oNoFollow makes opening a file fail rather than follow a symlink that
// replaced it since the directory was read.
const oNoFollow = syscall.O_NOFOLLOW

// keyOf returns what a scan compares to decide that a file is unchanged:
// size, mode, mtime, ctime, inode and device. ctime cannot be set by a
// process, so a tool that restores a file's mtime still changes its key.
func keyOf(fi fs.FileInfo) statKey {
	k := statKey{size: fi.Size(), mode: fi.Mode(), mtime: fi.ModTime().UnixNano()}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		k.ctime = st.Ctim.Nano()
		k.ino = uint64(st.Ino)
		k.dev = uint64(st.Dev)
	}
	return k
}
