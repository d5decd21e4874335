package integration

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/factline/factline/bus"
)

// A standalone NATS server for the fault tests that restart it: no
// nats-server binary is installed here, so the test binary itself, run
// again with natsdEnv set, serves the embedded server as a process of its
// own (what `nats-server -js -sd DIR` is in ops/nats/factline.conf's
// deployment), which a test SIGTERMs or SIGKILLs and starts again on the
// same store.
const natsdEnv = "FACTLINE_TEST_NATSD" // STORE_DIR,HOST:PORT

func TestMain(m *testing.M) {
	if spec := os.Getenv(natsdEnv); spec != "" {
		os.Exit(serveNatsd(spec))
	}
	os.Exit(m.Run())
}

// serveNatsd runs the server until SIGTERM or SIGINT, then shuts it down
// as nats-server does (flushing its stores).
func serveNatsd(spec string) int {
	dir, listen, ok := strings.Cut(spec, ",")
	if !ok {
		fmt.Fprintf(os.Stderr, "%s: want STORE_DIR,HOST:PORT, got %q\n", natsdEnv, spec)
		return 2
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	srv, err := bus.StartEmbedded(ctx, bus.EmbeddedConfig{StoreDir: dir, Listen: listen, Durability: bus.SyncInterval})
	cancel()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Fprintf(os.Stderr, "natsd listening on %s, store %s\n", listen, dir)
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT)
	<-sigs
	srv.Shutdown()
	return 0
}

// natsd is a standalone server process on a fixed loopback port and store.
type natsd struct {
	t      *testing.T
	store  string
	listen string
	logs   *syncBuffer

	mu     sync.Mutex
	cmd    *exec.Cmd
	exited chan struct{}
	starts int
}

func startNatsd(t *testing.T) *natsd {
	t.Helper()
	d := &natsd{t: t, store: t.TempDir(), listen: fmt.Sprintf("127.0.0.1:%d", freePorts(t, 1)[0]), logs: &syncBuffer{}}
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
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), natsdEnv+"="+d.store+","+d.listen)
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

func (d *natsd) countListening() int { return strings.Count(d.logs.String(), "natsd listening on") }

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
