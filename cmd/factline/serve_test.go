package main

import (
	"context"
	"strings"
	"testing"

	"github.com/factline/factline/bus"
)

// serve --store takes --fsync like run and demo: it starts the store's
// server with that durability and says which. A bad value, or --fsync
// where no embedded server starts (--nats), is a usage error rather than
// a setting silently ignored.
func TestServeFsync(t *testing.T) {
	t.Parallel()
	store := t.TempDir()
	srv := startServe(t, "--services", "meter", "--store", store, "--fsync", "interval")
	if out := srv.out.String(); !strings.Contains(out, "(fsync: interval)") || !strings.Contains(out, "serving meter") {
		t.Fatalf("serve --fsync interval: %q %q", out, srv.errOut.String())
	}
	if code := srv.stop(); code != 0 {
		t.Fatalf("serve exited %d: %q", code, srv.errOut.String())
	}
	srv = startServe(t, "--services", "meter", "--store", store, "--listen", "0")
	if out := srv.out.String(); !strings.Contains(out, "(fsync: always)") || !strings.Contains(out, "serving meter") {
		t.Fatalf("serve --listen, default fsync: %q %q", out, srv.errOut.String())
	}
	// A store another process holds keeps that process's durability.
	code, _, errOut := runCLI(t, "serve", "--services", "meter", "--store", store, "--fsync", "interval")
	if code != 2 || !strings.Contains(errOut, "--fsync interval") || !strings.Contains(errOut, "is held by process") || !strings.Contains(errOut, "fsync: always") {
		t.Errorf("serve --fsync on a served store: %d %q", code, errOut)
	}
	srv.stop()

	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"serve", "--store", t.TempDir(), "--fsync", "sometimes"}, `durability "sometimes"`},
		{[]string{"serve", "--nats", "nats://127.0.0.1:1", "--fsync", "interval"}, "--fsync applies to an embedded server"},
		{[]string{"run", "../../examples/demo/suite.yaml", "--nats", "nats://127.0.0.1:1", "--fsync", "interval"}, "--fsync applies to an embedded server"},
	} {
		code, out, errOut := runCLI(t, c.args...)
		if code != 2 || out != "" || !strings.Contains(errOut, c.want) {
			t.Errorf("factline %v: exit %d, stdout %q, stderr %q; want 2 and %q", c.args, code, out, errOut, c.want)
		}
	}
	if code, out, _ := runCLI(t, "serve", "--help"); code != 0 || !strings.Contains(out, "--fsync") {
		t.Errorf("serve --help does not list --fsync: %q", out)
	}
}

// --workers sets how many deliveries a service's instances handle at once;
// what cannot apply is a usage error naming the flag.
func TestServeWorkers(t *testing.T) {
	t.Parallel()
	store := t.TempDir()
	srv := startServe(t, "--services", "staller,decider", "--store", store, "--workers", "staller=4,decider=2")
	if out := srv.out.String(); !strings.Contains(out, "serving staller") {
		t.Fatalf("serve --workers: %q %q", out, srv.errOut.String())
	}
	if code := srv.stop(); code != 0 {
		t.Fatalf("serve exited %d: %q", code, srv.errOut.String())
	}
	for _, c := range []struct {
		workers, want string
	}{
		{"runner=2", "--instances"},
		{"stalller=2", `unknown service "stalller"`},
		{"grader=2", "grader is not among --services"},
		{"staller=0", "--workers staller=0: at least 1"},
		{"staller=many", "--workers"},
	} {
		code, out, errOut := runCLI(t, "serve", "--services", "staller", "--store", t.TempDir(), "--workers", c.workers)
		if code != 2 || out != "" || !strings.Contains(errOut, c.want) {
			t.Errorf("--workers %s: exit %d, stdout %q, stderr %q; want 2 and %q", c.workers, code, out, errOut, c.want)
		}
	}
}

// An ack wait too short for a runner to fence its external effects (an
// in-progress ack the server confirms and a read of the run's newest
// claim, both done before each send with a margin to spare) is a usage
// error that names the minimum and why; services other than the runner
// send nothing and keep the older floor.
func TestServeRefusesAnAckWaitTooShortToFence(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{
		{"serve", "--services", "runner", "--ack-wait", "1500ms", "--nats", "nats://127.0.0.1:1"},
		{"serve", "--ack-wait", "1s", "--nats", "nats://127.0.0.1:1"}, // every service, the runner among them
	} {
		code, _, errOut := runCLI(t, args...)
		if code != 2 || !strings.Contains(errOut, "--ack-wait") || !strings.Contains(errOut, "at least 2s") || !strings.Contains(errOut, "external effect") {
			t.Errorf("factline %v: exit %d, stderr %q; want exit 2 naming the 2s minimum and why", args, code, errOut)
		}
	}
	// Without a runner, 1s is still enough: the command gets as far as
	// connecting (and fails there, on a port nobody serves).
	code, _, errOut := runCLI(t, "serve", "--services", "meter", "--ack-wait", "1s", "--nats", "nats://127.0.0.1:1")
	if code == 2 || strings.Contains(errOut, "--ack-wait") {
		t.Errorf("serve --services meter --ack-wait 1s: exit %d, stderr %q; want it accepted", code, errOut)
	}
}

// 'serve --services none --store DIR --listen PORT' holds the store and
// serves it, and runs no service: no durable consumer of any service is
// made, while another process reaches the store through it. That is what
// lets a benchmark read the server's memory apart from the services'.
// Without --listen it would serve no one: a usage error.
func TestServeNoneServesOnlyTheStore(t *testing.T) {
	t.Parallel()
	store := t.TempDir()
	srv := startServe(t, "--services", "none", "--store", store, "--listen", ":0")
	if out := srv.out.String(); !strings.Contains(out, "serving the store only") {
		t.Fatalf("serve --services none: %q %q", out, srv.errOut.String())
	}
	tg := target{store: store}
	b, closeBus, err := tg.open(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer closeBus()
	s, err := b.JetStream().Stream(context.Background(), bus.FactsStream)
	if err != nil {
		t.Fatalf("the served store's %s: %v", bus.FactsStream, err)
	}
	var names []string
	for n := range s.ConsumerNames(context.Background()).Name() {
		names = append(names, n)
	}
	if len(names) != 0 {
		t.Errorf("serve --services none made consumers %v, want none", names)
	}
	if code := srv.stop(); code != 0 {
		t.Fatalf("serve --services none exited %d: %q", code, srv.errOut.String())
	}

	code, _, errOut := runCLI(t, "serve", "--services", "none", "--store", t.TempDir())
	if code != 2 || !strings.Contains(errOut, "--listen") {
		t.Errorf("serve --services none without --listen: %d %q, want a usage error naming --listen", code, errOut)
	}
}
