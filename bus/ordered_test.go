package bus_test

import (
	"context"
	"testing"

	"github.com/factline/factline/bus"
	"github.com/factline/factline/bus/bustest"
)

// consumers counts the consumers a stream holds on the server.
func consumers(t *testing.T, b *bus.Bus, stream string) int {
	t.Helper()
	s, err := b.JetStream().Stream(testCtx(t), stream)
	if err != nil {
		t.Fatal(err)
	}
	info, err := s.Info(testCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	return info.State.Consumers
}

// A stream allows 1,000 consumers by default and a stopped ordered consumer
// stays on the server for five minutes unless deleted: reads and control
// watches must not leave theirs behind, or a service doing one per run is
// refused after 1,000 runs.
func TestReadAndWatchLeaveNoConsumerBehind(t *testing.T) {
	b, _ := bustest.Start(t)
	ctx := testCtx(t)
	if _, err := b.Append(ctx, bus.Expect{}, bus.Pending{Fact: bustest.Claim(t, "s", "r", 1)}); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		n := 0
		if _, err := b.Read(ctx, bus.ReadOptions{}, func(bus.Raw) error { n++; return nil }); err != nil || n != 1 {
			t.Fatalf("read %d facts, err %v; want 1", n, err)
		}
	}
	if n := consumers(t, b, bus.FactsStream); n != 0 {
		t.Errorf("FACTS holds %d consumers after three reads, want 0", n)
	}

	wctx, cancel := context.WithCancel(ctx)
	ch, err := b.WatchControls(wctx, "s", "r")
	if err != nil {
		t.Fatal(err)
	}
	if n := consumers(t, b, bus.ControlStream); n != 1 {
		t.Errorf("CONTROL holds %d consumers during a watch, want 1", n)
	}
	cancel()
	for range ch {
	}
	if n := consumers(t, b, bus.ControlStream); n != 0 {
		t.Errorf("CONTROL holds %d consumers after the watch ended, want 0", n)
	}
}
