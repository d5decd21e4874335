package bus_test

import (
	"testing"
	"time"

	"github.com/factline/factline/bus"
	"github.com/factline/factline/bus/bustest"
	"github.com/factline/factline/events"
	"github.com/factline/factline/internal/testutil"
)

// factline_consumer_pending_messages is an instance's view of its
// consumer's lag, and FactlineConsumerLag takes the largest over the
// instances. It was set only at a delivery: an instance whose workers are
// all held by long work (a runner's runs) kept the lag of its last
// delivery for as long as they ran, hiding a backlog that grew behind
// them, or holding up a stale one after other instances drained it. It
// follows the server while no delivery comes.
func TestTheLagGaugeFollowsTheServerWhileNoDeliveryComes(t *testing.T) {
	ctx := testCtx(t)
	b, _ := bustest.Start(t)
	const name = "lagged"
	held := make(chan struct{}, 1)
	// The only worker is held until the test ends.
	consume(t, b, bus.ConsumerConfig{Name: name, Filters: []string{events.KindFilter(events.KindTurnCompleted)}, AckWait: time.Second, OnDemand: true},
		holdWork(held))
	appendHeld(t, ctx, b, "first", held)
	if v := counterValue(t, "factline_consumer_pending_messages", `consumer="`+name+`"`); v != 0 {
		t.Fatalf("lag at the first delivery: %v, want 0", v)
	}
	for i := range 7 {
		run := string(rune('a' + i))
		if _, err := b.Append(ctx, bus.Expect{}, bus.Pending{Fact: bustest.Turn(t, "s", run, 1, 1)}); err != nil {
			t.Fatal(err)
		}
	}
	testutil.Within(t, 20*time.Second, "the lag gauge to show the 7 waiting behind the held worker", func() bool {
		return counterValue(t, "factline_consumer_pending_messages", `consumer="`+name+`"`) == 7
	})
}
