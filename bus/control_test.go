package bus_test

import (
	"testing"
	"time"

	"github.com/factline/factline/bus/bustest"
	"github.com/factline/factline/events"
)

// A control's ID is chosen by its sender, and the same ID sent to two runs
// (or suites) is two signals: the stream-wide deduplication must not drop
// the second as a copy of the first.
func TestSameControlIDForTwoRunsIsTwoSignals(t *testing.T) {
	ctx := testCtx(t)
	b, _ := bustest.Start(t)
	targets := [][2]string{{"s", "r1"}, {"s", "r2"}, {"other", "r1"}}
	for _, tg := range targets {
		if err := b.Controls().Send(ctx, tg[0], tg[1], events.Control{ID: "steer-1", Signal: events.SignalSteer, Instruction: "also x"}); err != nil {
			t.Fatal(err)
		}
	}
	for _, tg := range targets {
		ch, err := b.Controls().Watch(ctx, tg[0], tg[1])
		if err != nil {
			t.Fatal(err)
		}
		select {
		case c := <-ch:
			if c.ID != "steer-1" {
				t.Fatalf("%v got %+v", tg, c)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("%s/%s never got its steer: deduplicated as another run's", tg[0], tg[1])
		}
	}
}
