package main

import (
	"fmt"
	"os"
	"regexp"
	"syscall"
	"testing"
	"unsafe"

	"github.com/factline/factline/bus"
	"github.com/factline/factline/bus/bustest"
	"github.com/factline/factline/internal/testutil"
)

// openPTY opens a pseudo-terminal: what the command writes to tty shows
// up on read.
func openPTY(t *testing.T) (tty *os.File, read func() string) {
	t.Helper()
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Fatalf("open a pseudo-terminal: %v", err)
	}
	var unlock int32
	if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, m.Fd(), syscall.TIOCSPTLCK, uintptr(unsafe.Pointer(&unlock))); e != 0 {
		t.Fatalf("unlock the pseudo-terminal: %v", e)
	}
	var n uint32
	if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, m.Fd(), syscall.TIOCGPTN, uintptr(unsafe.Pointer(&n))); e != 0 {
		t.Fatalf("name the pseudo-terminal: %v", e)
	}
	s, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Fatalf("open the terminal side: %v", err)
	}
	var got testutil.LogBuffer
	done := make(chan struct{})
	go func() {
		defer close(done)
		buf := make([]byte, 4096)
		for {
			n, err := m.Read(buf)
			got.Write(buf[:n])
			if err != nil {
				return // the terminal side closed
			}
		}
	}()
	t.Cleanup(func() { s.Close(); <-done; m.Close() })
	return s, got.String
}

// On a terminal, run shows its progress line once a second with a live
// elapsed time, even while no fact arrives (here no fleet serves, so
// none does).
func TestRunProgressIsLiveOnATerminal(t *testing.T) {
	// Serial: it reads the progress line of each second, and beside
	// parallel tests on a loaded -race run the line of 1s never came (0s,
	// then 2s).
	srv := bustest.Server(t, bus.EmbeddedConfig{Listen: "127.0.0.1:-1"})
	tty, read := openPTY(t)
	cancel, exited := startRun(t, tty, &testutil.LogBuffer{}, tinySuite, "--nats", srv.ClientURL())
	waitForText(t, read, "runs: 0/2 started", exited)
	waitForText(t, read, "— 2s", exited)
	cancel()
	<-exited
	if !regexp.MustCompile(`\rruns: 0/2 started, 0 ended, 0 graded, 0 passed — 1s`).MatchString(read()) {
		t.Errorf("no progress line rewritten in place at 1s: %q", read())
	}
}
