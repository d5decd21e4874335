package bus_test

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/factline/factline/bus"
	"github.com/factline/factline/bus/bustest"
	"github.com/factline/factline/events"
	"github.com/factline/factline/internal/testutil"
)

// A service's first pulls answered "no responders" are pulled again in
// place while its node may not know the new consumer yet
// (TestServiceConsumersOnAHealthyClusterWarnOfNothing); once a pull was
// answered, the consumer's vanishing under the service is a real
// interruption and must still be logged, and the service must read on
// from the consumer it makes again. Both ways of pulling are checked.
func TestAConsumerLostAfterItsFirstAnswerIsLoggedAsAnInterruption(t *testing.T) {
	for _, onDemand := range []bool{false, true} {
		name := "ahead"
		if onDemand {
			name = "ondemand"
		}
		t.Run(name, func(t *testing.T) {
			ctx := testCtx(t)
			srv := bustest.Server(t, bus.EmbeddedConfig{})
			var logs testutil.LogBuffer
			b := bustest.OpenWith(t, srv, bus.Config{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
			handled := make(chan string, 16)
			turn := bustest.Turn(t, "s", "r0", 1, 1)
			cfg := bus.ConsumerConfig{Name: name, Filters: []string{events.KindFilter(turn.Kind())}, OnDemand: onDemand}
			consume(t, b, cfg, func(_ context.Context, d bus.Delivery) error {
				handled <- d.Fact.Run
				return nil
			})
			appendTurn := func(run string) {
				t.Helper()
				if _, err := b.Append(ctx, bus.Expect{}, bus.Pending{Fact: bustest.Turn(t, "s", run, 1, 1)}); err != nil {
					t.Fatal(err)
				}
				for {
					select {
					case got := <-handled:
						if got == run {
							return
						}
					case <-ctx.Done():
						t.Fatalf("the turn of %s was never handled; log:\n%s", run, logs.String())
					}
				}
			}
			appendTurn("r0")
			if err := b.JetStream().DeleteConsumer(ctx, bus.FactsStream, name); err != nil {
				t.Fatal(err)
			}
			for !strings.Contains(logs.String(), "consumer interrupted") {
				select {
				case <-ctx.Done():
					t.Fatalf("the consumer deleted under the service was not logged as an interruption; log:\n%s", logs.String())
				case <-time.After(20 * time.Millisecond):
				}
			}
			appendTurn("r1")
			t.Logf("log:\n%s", logs.String())
		})
	}
}
