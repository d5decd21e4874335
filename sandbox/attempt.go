package sandbox

import (
	"context"
	"fmt"
	"os/exec"
)

// starter says how Run starts the attempt's next command: on the thread
// of the attempt's mount namespace (made at its first command, so that
// its directories exist and are handed over by then) when the containment
// has one, else directly (nil).
func (s *Sandbox) starter() (func(*exec.Cmd) func() error, error) {
	direct := func(*exec.Cmd) func() error { return nil }
	if s == nil {
		return direct, nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ran = true
	if s.c == nil || !s.c.mounts.any() {
		return direct, nil
	}
	if s.ns == nil {
		ns, err := newMountNS(s.c.mounts, s.owned)
		if err != nil {
			return nil, err
		}
		s.ns = ns
	}
	ns := s.ns
	return func(p *exec.Cmd) func() error {
		return func() error {
			var err error
			ns.do(func() { err = p.Start() })
			return err
		}
	}, nil
}

// closeProcesses ends a host attempt: every process of its uid is killed,
// its mount namespace goes with them, and what its uid left in the shared
// places is removed (when anything there was writable to it). Run may be
// called again afterwards: it starts afresh.
func (s *Sandbox) closeProcesses() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.ran {
		return nil
	}
	s.ran = false
	s.killAll()
	if s.ns != nil {
		s.ns.close()
		s.ns = nil
	}
	if s.uid == 0 || s.c == nil || len(s.c.sweep) == 0 {
		return nil
	}
	if _, err := sweepFiles(s.uid, s.c.sweep); err != nil {
		return fmt.Errorf("remove what uid %d left: %w", s.uid, err)
	}
	return nil
}

// Close ends the attempt. A container is removed, with everything still
// running in it; once it is, Close again does nothing. An attempt of host
// processes has every process of its uid killed, its mount namespace (its
// /tmp, /var/tmp, /dev/shm) dropped and what its uid left in the places
// every user may write removed. Not safe to call while a command runs.
func (s *Sandbox) Close(ctx context.Context) error {
	if s == nil {
		return nil
	}
	if s.ctr == nil {
		return s.closeProcesses()
	}
	return s.closeContainer(ctx)
}
