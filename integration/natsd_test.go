package integration

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
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

// natsd is a standalone server process on a fixed loopback port and store
// (internal/testutil/natsd: what `nats-server -js -sd DIR` is in
// ops/nats/factline.conf's deployment), which a test SIGTERMs or SIGKILLs
// and starts again on the same store.
type natsd struct {
	t      *testing.T
	store  string
	listen string
	logs   *testutil.LogBuffer

	mu     sync.Mutex
	cmd    *exec.Cmd
	exited chan struct{}
	starts int
}

func startNatsd(t *testing.T) *natsd {
	t.Helper()
	d := &natsd{t: t, store: t.TempDir(), listen: fmt.Sprintf("127.0.0.1:%d", freePorts(t, 1)[0]), logs: &testutil.LogBuffer{}}
	d.start()
	t.Cleanup(func() {
		d.stop(syscall.SIGTERM)
		if t.Failed() {
			t.Logf("natsd (%d starts):\n%s", d.starts, d.logs.String())
		}
	})
	return d
}

func (d *natsd) url() string { return "nats://" + d.listen }

// start runs the server and waits until it listens.
func (d *natsd) start() {
	d.t.Helper()
	d.mu.Lock()
	bin, err := testutil.NatsdBinary()
	if err != nil {
		d.mu.Unlock()
		d.t.Fatal(err)
	}
	cmd := exec.Command(bin, "-store", d.store, "-listen", d.listen)
	cmd.Stdout, cmd.Stderr = d.logs, d.logs
	if err := cmd.Start(); err != nil {
		d.mu.Unlock()
		d.t.Fatalf("start natsd: %v", err)
	}
	d.starts++
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	d.cmd, d.exited = cmd, exited
	d.mu.Unlock()
	for d.countListening() < d.starts {
		select {
		case <-exited:
			d.t.Fatalf("natsd exited at start:\n%s", d.logs.String())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

func (d *natsd) countListening() int { return strings.Count(d.logs.String(), testutil.NatsdListening) }

// stop signals the server and waits for it to exit.
func (d *natsd) stop(sig syscall.Signal) {
	d.mu.Lock()
	cmd, exited := d.cmd, d.exited
	d.cmd = nil
	d.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Signal(sig)
	select {
	case <-exited:
	case <-time.After(30 * time.Second):
		_ = cmd.Process.Kill()
		<-exited
	}
}

// restart stops the server with sig and starts it again on the same store
// after pause.
func (d *natsd) restart(sig syscall.Signal, pause time.Duration) {
	d.stop(sig)
	time.Sleep(pause)
	d.start()
}
