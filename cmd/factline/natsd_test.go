package main

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/factline/factline/internal/testutil"
)

func TestMain(m *testing.M) {
	code := m.Run()
	testutil.RemoveBuilt()
	os.Exit(code)
}

// startNatsd starts a standalone server process on a loopback port and
// returns its client URL; it is stopped when the test ends.
func startNatsd(t testing.TB) string {
	t.Helper()
	return startNatsdIn(t, t.TempDir())
}

// startNatsdIn is startNatsd on the store directory dir.
func startNatsdIn(t testing.TB, dir string) string {
	t.Helper()
	listen := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	// A process of its own, so that a test that measures this process's
	// memory keeps the server's out of it.
	natsd, err := testutil.NatsdBinary()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(natsd, "-store", dir, "-listen", listen)
	out := &testutil.LogBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// A server whose disk filled may never finish shutting down (it
		// flushes to a disk that takes nothing): after a bound it is
		// killed, so that one failed test does not hold the package until
		// its timeout.
		_ = cmd.Process.Signal(syscall.SIGTERM)
		kill := time.AfterFunc(15*time.Second, func() { _ = cmd.Process.Kill() })
		defer kill.Stop()
		_ = cmd.Wait()
	})
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(out.String(), testutil.NatsdListening) {
		if time.Now().After(deadline) {
			t.Fatalf("the server process did not start: %q", out.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	return "nats://" + listen
}
