package bus_test

import (
	"context"
	"testing"

	"github.com/factline/factline/bus"
	"github.com/factline/factline/bus/bustest"
	"github.com/factline/factline/events"
)

// Consume runs until its context is done, and a service's Run returns nil
// for a shutdown. A context ended while the consumer was still being made
// (a SIGTERM in a service's first moments, or a test stopping instances
// that were still starting) is a shutdown too; it returned "consumer X:
// context canceled", which a service reports as its failure.
func TestAConsumerStoppedBeforeItStartedReturnsNil(t *testing.T) {
	b, _ := bustest.Start(t)
	ctx, cancel := context.WithCancel(testCtx(t))
	cancel()
	err := b.Consume(ctx, bus.ConsumerConfig{Name: "stopped", Filters: []string{events.KindFilter(events.KindTurnCompleted)}},
		func(context.Context, bus.Delivery) error { return nil })
	if err != nil {
		t.Fatalf("Consume with its context already done: %v, want nil", err)
	}
}
