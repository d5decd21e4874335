package sandbox

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"runtime"
	"sync"
)

// ListenInside opens a TCP listener on 127.0.0.1 (a port the kernel
// picks) inside the network namespace of the sandbox's container, for an
// endpoint only the container's processes can reach: the host's network
// namespace never sees it, and the container reaches nothing else. The
// container's loopback, which a container without network keeps down, is
// brought up for it; Close takes it down again. The socket is made on an
// OS thread that enters the namespace and dies with its goroutine, so no
// other goroutine ever runs there; once made, the socket stays in that
// namespace whichever thread serves it.
//
// A container restarted (the sweep of a sandbox without a uid of its own)
// gets a new namespace: open the listener after the commands that may
// restart it, just before the command that uses it.
func (s *Sandbox) ListenInside(ctx context.Context) (net.Listener, error) {
	if s == nil || s.ctr == nil {
		return nil, errors.New("listen inside: the sandbox has no container")
	}
	ctr := s.ctr
	pid, err := ctr.pid(ctx)
	if err != nil {
		return nil, err
	}
	type made struct {
		ln  net.Listener
		err error
	}
	c := make(chan made, 1)
	go func() {
		// Never unlocked: a thread in another namespace must die with the
		// goroutine, not go back to the scheduler.
		runtime.LockOSThread()
		ln, err := func() (net.Listener, error) {
			if err := enterNetNS(pid); err != nil {
				return nil, err
			}
			if err := setLoopback(true); err != nil {
				return nil, err
			}
			return net.Listen("tcp", "127.0.0.1:0")
		}()
		c <- made{ln, err}
	}()
	m := <-c
	if m.err != nil {
		return nil, fmt.Errorf("listen inside container %s: %w", ctr.name, m.err)
	}
	return &insideListener{Listener: m.ln, pid: pid, down: ctr.network == NetworkNone}, nil
}

// insideListener is a listener in a container's network namespace; it
// leaves the container's loopback as it found it when closed.
type insideListener struct {
	net.Listener
	pid  int
	down bool // take the loopback down again on Close
	once sync.Once
	err  error
}

// Close closes the listener and, for a container without network, takes
// its loopback down again.
func (l *insideListener) Close() error {
	l.once.Do(func() {
		l.err = l.Listener.Close()
		if l.down {
			// A container already gone has no loopback to take down.
			if err := loopbackDown(l.pid); err != nil && !errors.Is(err, os.ErrNotExist) && l.err == nil {
				l.err = err
			}
		}
	})
	return l.err
}
