package main

import (
	"context"
	"strings"
	"testing"

	"github.com/factline/factline/bus"
)

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
