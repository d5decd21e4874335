//go:build !linux

package sandbox

import (
	"context"
	"errors"
	"net"
	"syscall"
)

// sysProcAttr starts a command in its own session. User and network
// namespaces are Linux features; the probe reports them unsupported here.
func (s *Sandbox) sysProcAttr(bool) *syscall.SysProcAttr {
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

// ListenInside needs Linux network namespaces.
func (s *Sandbox) ListenInside(context.Context) (net.Listener, error) {
	return nil, errors.New("listen inside a container: network namespaces are a Linux feature")
}

// newMountNS needs Linux mount namespaces; the probe never asks for one
// elsewhere (it is root only, and records the feature unsupported).
func newMountNS(nsOptions, []string) (*mountNS, error) {
	return nil, errors.New("mount namespaces are a Linux feature")
}

// mountNS is never made here.
type mountNS struct{}

func (*mountNS) do(f func()) { f() }
func (*mountNS) close()      {}

// sweepFiles needs Linux file ownership as sandbox_linux reads it.
func sweepFiles(uint32, []string) (int, error) { return 0, nil }

// Self needs Linux's /proc.
func Self() (Owner, error) { return Owner{}, errors.New("owners are told apart by Linux's /proc") }

// liveness cannot be told here: nothing is taken for dead.
func (Owner) liveness() liveness { return ownerUnknown }

// killUID is a no-op where processes cannot be listed by user.
func killUID(uint32) int { return 0 }
