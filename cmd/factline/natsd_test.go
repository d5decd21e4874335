package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/factline/factline/bus"
)

// natsdEnv makes the test binary, run again with it set, serve the
// embedded JetStream server as a process of its own (STORE_DIR,HOST:PORT):
// a test that measures this process's memory keeps the server's out of it.
const natsdEnv = "FACTLINE_TEST_NATSD"

func TestMain(m *testing.M) {
	if spec := os.Getenv(natsdEnv); spec != "" {
		os.Exit(serveNatsd(spec))
	}
	os.Exit(m.Run())
}

// serveNatsd runs the server until SIGTERM or SIGINT, then shuts it down.
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
	fmt.Println("natsd ready")
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT)
	<-sigs
	srv.Shutdown()
	return 0
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
	cmd := exec.Command(os.Args[0], "-test.run", "^$")
	cmd.Env = append(os.Environ(), natsdEnv+"="+dir+","+listen)
	out := &lockedBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
	})
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(out.String(), "natsd ready") {
		if time.Now().After(deadline) {
			t.Fatalf("the server process did not start: %q", out.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	return "nats://" + listen
}
