package integration

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/factline/factline/internal/testutil"
)

var (
	binOnce sync.Once
	binPath string
	binErr  error
)

// factlineBinary builds cmd/factline once for the tests that run it as
// separate OS processes.
func factlineBinary(t *testing.T) string {
	t.Helper()
	binOnce.Do(func() {
		dir, err := os.MkdirTemp("", "factline-bin-")
		if err != nil {
			binErr = err
			return
		}
		binPath = filepath.Join(dir, "factline")
		out, err := testutil.GoBuild(binPath, "../cmd/factline").CombinedOutput()
		if err != nil {
			binErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if binErr != nil {
		t.Fatal(binErr)
	}
	return binPath
}

// normalise drops what no two runs share (wall times) from a report.
func normalise(t *testing.T, report []byte) string {
	t.Helper()
	return testutil.ReportWithoutWallTimes(t, report)
}

// The demo suite run by services in three separate OS processes (the
// stall handler, decider, grader and meter in one, a runner in each of the
// other two) against one NATS server on loopback, submitted by a fourth:
// the same report as everything in one process.
func TestServeInSeparateProcesses(t *testing.T) {
	t.Parallel()
	bin := factlineBinary(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	port := freePorts(t, 1)[0]
	url := fmt.Sprintf("nats://127.0.0.1:%d", port)
	var procs []*exec.Cmd
	start := func(args ...string) {
		cmd := exec.CommandContext(ctx, bin, args...)
		var logs bytes.Buffer
		cmd.Stdout, cmd.Stderr = &logs, &logs
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		procs = append(procs, cmd)
		t.Cleanup(func() {
			_ = cmd.Process.Signal(syscall.SIGTERM)
			_ = cmd.Wait()
			if t.Failed() {
				t.Logf("factline %v:\n%s", args, logs.String())
			}
		})
	}
	store := t.TempDir()
	start("serve", "--services", "staller,decider,grader,meter", "--store", store, "--listen", fmt.Sprintf("127.0.0.1:%d", port))
	for {
		if c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port)); err == nil {
			c.Close()
			break
		}
		if ctx.Err() != nil {
			t.Fatal("the NATS server never listened")
		}
		time.Sleep(50 * time.Millisecond)
	}
	// The server admits only the holder of the store's credential: one
	// runner finds it through --store (and joins the served store), the
	// other and the submitter are given it.
	cred := filepath.Join(store, "nats-client.nk")
	start("serve", "--services", "runner", "--store", store, "--instances", "2", "--work-dir", t.TempDir())
	start("serve", "--services", "runner", "--nats", url, "--nkey", cred, "--instances", "2", "--work-dir", t.TempDir())

	distributed, err := exec.CommandContext(ctx, bin, "run", "../examples/demo/suite.yaml", "--nats", url, "--nkey", cred, "--json").Output()
	if err != nil {
		t.Fatalf("run against the fleet: %v", err)
	}
	single, err := exec.CommandContext(ctx, bin, "run", "../examples/demo/suite.yaml", "--store", t.TempDir(), "--fsync", "interval", "--json").Output()
	if err != nil {
		t.Fatalf("run in one process: %v", err)
	}
	if a, b := normalise(t, distributed), normalise(t, single); a != b {
		t.Fatalf("reports differ:\n distributed %s\n      single %s", a, b)
	}
}
