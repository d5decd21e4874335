package bus_test

import (
	"context"
	"testing"
	"time"

	"github.com/factline/factline/bus"
	"github.com/factline/factline/bus/bustest"
	"github.com/factline/factline/events"
	"github.com/factline/factline/ops/metrics"
)

// A consumer's labelled counters are exported at 0 from its start, so that
// Prometheus sees their first increase (a series that first appears at 1
// shows no increase, and FactlineDeadLetters would miss the first dead
// letter); so is the count of every kind of fact appended.
func TestCountersStartAtZero(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	b, _ := bustest.Start(t)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = b.Consume(ctx, bus.ConsumerConfig{Name: "zero-test", Filters: []string{events.KindFilter(events.KindRunEnded)}},
			func(context.Context, bus.Delivery) error { return nil })
	}()
	want := map[string]string{
		"factline_dead_letters_total":      "zero-test",
		"factline_redeliveries_total":      "zero-test",
		"factline_bus_infra_retries_total": "zero-test",
	}
	for {
		found := map[string]bool{}
		families, err := metrics.Registry.Gather()
		if err != nil {
			t.Fatal(err)
		}
		kinds := map[string]bool{}
		for _, f := range families {
			for _, m := range f.GetMetric() {
				for _, l := range m.GetLabel() {
					if l.GetName() == "consumer" && want[f.GetName()] == l.GetValue() {
						found[f.GetName()] = true
					}
					if f.GetName() == "factline_facts_appended_total" && l.GetName() == "kind" {
						kinds[l.GetValue()] = true
					}
				}
			}
		}
		if len(found) == len(want) && len(kinds) == len(events.Kinds()) {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("exported at start: %v and %d of %d kinds", found, len(kinds), len(events.Kinds()))
		}
		time.Sleep(20 * time.Millisecond)
	}
	cancel()
	<-done
}
