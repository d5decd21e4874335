package bus_test

import (
	"context"
	"testing"

	"github.com/factline/factline/bus"
	"github.com/factline/factline/bus/bustest"
)

// Finished reads and control watches leave no consumer behind: a fleet
// reads once per ended run and watches once per run, and the server allows
// only so many consumers per stream.
func TestReadsAndWatchesLeaveNoConsumers(t *testing.T) {
	ctx := testCtx(t)
	b, _ := bustest.Start(t)
	appendRun(t, b, "s", "r", 1, 3, bus.Expect{})
	for range 20 {
		n := 0
		if _, err := b.Read(ctx, bus.ReadOptions{}, func(bus.Raw) error { n++; return nil }); err != nil || n != 3 {
			t.Fatalf("read %d facts: %v", n, err)
		}
		if _, err := b.Read(ctx, bus.ReadOptions{Filter: "fact.none.>"}, func(bus.Raw) error { return nil }); err != nil {
			t.Fatal(err)
		}
		wctx, stop := context.WithCancel(ctx)
		ch, err := b.Controls().Watch(wctx, "s", "r")
		if err != nil {
			t.Fatal(err)
		}
		stop()
		for range ch {
		}
	}
	for _, stream := range []string{bus.FactsStream, bus.ControlStream} {
		s, err := b.JetStream().Stream(ctx, stream)
		if err != nil {
			t.Fatal(err)
		}
		if n := s.CachedInfo().State.Consumers; n != 0 {
			t.Errorf("%s holds %d consumers after the reads and watches ended", stream, n)
		}
	}
}
