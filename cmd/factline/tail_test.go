package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/factline/factline/bus"
	"github.com/factline/factline/events"
)

// tail --control reads the CONTROL stream like facts: from --since, to
// its end with --no-follow (it used to wait forever), for one --run, one
// --kind (a signal or status), and as --json.
func TestTailControlHonoursItsOptions(t *testing.T) {
	t.Parallel()
	store := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	srv, err := bus.StartEmbedded(ctx, bus.EmbeddedConfig{StoreDir: store, Durability: bus.SyncInterval})
	if err != nil {
		t.Fatal(err)
	}
	nc, err := srv.Connect()
	if err != nil {
		t.Fatal(err)
	}
	b, err := bus.Open(ctx, nc, bus.Config{})
	if err != nil {
		t.Fatal(err)
	}
	for _, run := range []string{"r1", "r2"} {
		if err := b.Controls().Send(ctx, "s", run, events.Control{ID: "c-" + run, Signal: events.SignalCancel, Reason: "stop " + run}); err != nil {
			t.Fatal(err)
		}
		if err := b.Controls().Send(ctx, "s", run, events.Control{ID: "s-" + run, Signal: events.SignalSteer, Instruction: "also " + run}); err != nil {
			t.Fatal(err)
		}
	}
	nc.Close()
	srv.Shutdown()

	code, out, errOut := runCLI(t, "tail", "--control", "--since", "start", "--no-follow", "--store", store)
	if code != 0 || strings.Count(out, "\n") != 4 {
		t.Fatalf("all signals: %d %q %q", code, out, errOut)
	}
	code, out, _ = runCLI(t, "tail", "--control", "--since", "start", "--no-follow", "--run", "r2", "--kind", "steer", "--json", "--store", store)
	var line struct {
		Subject string
		Data    struct{ ID, Instruction string }
	}
	if code != 0 || strings.Count(out, "\n") != 1 || json.Unmarshal([]byte(out), &line) != nil ||
		line.Subject != "ctl.s.r2.steer" || line.Data.Instruction != "also r2" {
		t.Fatalf("one run's steers as JSON: %d %q", code, out)
	}
	if code, _, errOut := runCLI(t, "tail", "--control", "--kind", "explode", "--no-follow", "--store", store); code != 2 || !strings.Contains(errOut, `--kind "explode"`) {
		t.Fatalf("an unknown signal: %d %q", code, errOut)
	}
}
