package testutil

import (
	"os"
	"syscall"
)

// FileLocked reports whether another open file description holds an
// flock(2) on the file at path, as a store's holder or flock(1) does. It
// takes the lock for an instant when it is free, and lets it go; a path
// that does not exist is not locked.
func FileLocked(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		return true
	}
	_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
	return false
}
