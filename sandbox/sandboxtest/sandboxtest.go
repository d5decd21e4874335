// Package sandboxtest holds what tests of contained commands share.
package sandboxtest

import (
	"net"
	"os"
	"path/filepath"
	"sync/atomic"
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

// Listener is a loopback listener that counts the connections it accepted:
// what a contained command must not reach.
type Listener struct {
	net.Listener
	accepted atomic.Int32
}

// Listen starts a Listener on 127.0.0.1, closed when the test ends.
func Listen(tb testing.TB) *Listener {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	l := &Listener{Listener: ln}
	tb.Cleanup(func() { _ = ln.Close() })
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			l.accepted.Add(1)
			_ = conn.Close()
		}
	}()
	return l
}

// Accepted is how many connections reached the listener.
func (l *Listener) Accepted() int { return int(l.accepted.Load()) }
