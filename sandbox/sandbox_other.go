//go:build !linux

package sandbox

import (
	"errors"
	"syscall"
)

// sysProcAttr starts a command in its own session. User and network
// namespaces are Linux features; the probe reports them unsupported here.
func (s *Sandbox) sysProcAttr() *syscall.SysProcAttr {
	attr := &syscall.SysProcAttr{Setsid: true}
	if s != nil && s.uid != 0 {
		attr.Credential = &syscall.Credential{Uid: s.uid, Gid: s.uid}
	}
	return attr
}

// killAll is a no-op where processes cannot be listed by user; the
// session is still killed as a whole.
func (s *Sandbox) killAll() bool { return true }

// signalAll is a no-op here, like killAll.
func (s *Sandbox) signalAll() {}

// owner returns the uid owning path and its number of hard links (not
// following a symlink).
func owner(path string) (uint32, uint64) {
	var st syscall.Stat_t
	if err := syscall.Lstat(path, &st); err != nil {
		return 0, 0
	}
	return st.Uid, uint64(st.Nlink)
}

// loopbackDown needs Linux network namespaces.
func loopbackDown(int) error { return errors.New("network namespaces are a Linux feature") }
