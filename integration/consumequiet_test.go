package integration

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/factline/factline/bus"
	"github.com/factline/factline/bus/bustest"
	"github.com/factline/factline/events"
	"github.com/factline/factline/internal/testutil"
)

// A service's durable consumer is made (or looked up) at its start, and
// JetStream may place its leader on any node. At a service's first start
// on a cluster an operator saw about three "consumer interrupted; pulling
// again … no responders available for request" warnings: the first pulls
// went out before the node the client is connected to knew the new
// consumer's subscription, which another node holds (as a control watch's
// did, TestControlWatchesOnAHealthyClusterWarnOfNothing). That is no
// interruption. Services started on a healthy three-node cluster, several
// at once and each with two instances, pulling ahead and on demand as
// factline's services do, must log none, and each must still be handed a
// fact appended for it.
func TestServiceConsumersOnAHealthyClusterWarnOfNothing(t *testing.T) {
	_, nodes := startCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	var logs testutil.LogBuffer
	// A client of one node: most consumer leaders are placed on the others.
	b, err := bus.Dial(ctx, nodes[0].ClientURL(), bus.Config{Replicas: 3, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Conn().Close)

	const (
		rounds    = 15
		services  = 4 // started at once each round, half of them on demand
		instances = 2
		suite     = "quiet"
	)
	kind := bustest.Turn(t, suite, "r", 1, 1).Kind()
	for i := range rounds {
		run := fmt.Sprintf("r%d", i) // the runs r<i>-<try> are this round's
		cctx, stop := context.WithCancel(ctx)
		var wg sync.WaitGroup
		errs := make(chan error, services*instances)
		handed := make([]chan struct{}, services)
		for s := range services {
			got := make(chan struct{}, 1)
			handed[s] = got
			cfg := bus.ConsumerConfig{Name: fmt.Sprintf("quiet%d-%d", i, s), Filters: []string{events.KindFilter(kind)}, DeliverNew: true, OnDemand: s%2 == 1}
			for range instances {
				wg.Go(func() {
					errs <- b.Consume(cctx, cfg, func(_ context.Context, d bus.Delivery) error {
						if strings.HasPrefix(d.Fact.Run, run+"-") {
							select {
							case got <- struct{}{}:
							default:
							}
						}
						return nil
					})
				})
			}
		}
		// A fact appended before a consumer is made is not its (it
		// starts at the stream's end): one is appended, for another run
		// each time, until every consumer was handed one.
		giveUp := time.After(30 * time.Second)
		for s, try := 0, 0; s < services; try++ {
			if _, err := b.Append(ctx, bus.Expect{}, bus.Pending{Fact: bustest.Turn(t, suite, fmt.Sprintf("%s-%d", run, try), 1, 1)}); err != nil {
				stop()
				t.Fatalf("append to %s: %v", run, err)
			}
			tick := time.After(time.Second)
			for s < services {
				select {
				case <-handed[s]:
					s++
					continue
				case <-tick:
				case <-giveUp:
					stop()
					t.Fatalf("consumer quiet%d-%d was never handed a fact of %s; log:\n%s", i, s, run, logs.String())
				}
				break
			}
		}
		stop()
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Fatalf("round %d: %v", i, err)
			}
		}
	}
	if n := strings.Count(logs.String(), "consumer interrupted"); n > 0 {
		t.Fatalf("%d warnings that a consumer was interrupted from %d services started on a healthy cluster:\n%s", n, rounds*services, logs.String())
	}
}
