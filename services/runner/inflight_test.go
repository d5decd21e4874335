package runner_test

import (
	"testing"
	"time"

	"github.com/factline/factline/bus"
	"github.com/factline/factline/services/runner"
)

// The server delivers a consumer no more than its MaxAckPending
// unacknowledged messages, and a runner holds a run's delivery for the
// whole run: the runners' consumer, as the server holds it, lets the fleet
// drive MaxRunsInFlight runs at once, not the bus's default of 256 (a
// fleet of any size drove at most 256).
func TestTheRunnersConsumerLetsTheFleetDriveManyRunsAtOnce(t *testing.T) {
	t.Parallel()
	e := start(t)
	for {
		info, err := e.b.JetStream().Consumer(e.ctx, bus.FactsStream, runner.ConsumerName)
		if err == nil {
			cfg, err := info.Info(e.ctx)
			if err != nil {
				t.Fatal(err)
			}
			if got := cfg.Config.MaxAckPending; got != runner.MaxRunsInFlight {
				t.Fatalf("the runners' consumer takes %d unacknowledged runs, want %d", got, runner.MaxRunsInFlight)
			}
			return
		}
		select {
		case <-e.ctx.Done():
			t.Fatalf("the runner never made its consumer: %v", err)
		case <-time.After(20 * time.Millisecond):
		}
	}
}
