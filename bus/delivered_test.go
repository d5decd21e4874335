package bus_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/factline/factline/bus"
	"github.com/factline/factline/bus/bustest"
	"github.com/factline/factline/events"
	"github.com/factline/factline/internal/testutil"
)

// lastForRequests counts the "where does this run end" direct gets the
// server is asked for one run, from a core subscription on the API
// subject.
func lastForRequests(t *testing.T, srv *bus.Embedded, run string) func() int {
	t.Helper()
	nc, err := srv.Connect()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	sub, err := nc.SubscribeSync("$JS.API.DIRECT.GET." + bus.FactsStream)
	if err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	n := 0
	return func() int {
		// After the flush every request made so far is queued here.
		if err := nc.Flush(); err != nil {
			t.Fatal(err)
		}
		for {
			m, err := sub.NextMsg(50 * time.Millisecond)
			if err != nil {
				return n
			}
			var req struct {
				LastFor string `json:"last_by_subj"`
			}
			if json.Unmarshal(m.Data, &req) == nil && req.LastFor == events.RunFilter("s", run) {
				n++
			}
		}
	}
}

// A consumer's handler loads its run through the delivered fact without
// asking the server where the run ends: the delivered message's run links
// name the facts before it. Each load still holds the whole run through
// the delivered fact, in order.
func TestADeliveredFactIsLoadedThroughItsOwnLinks(t *testing.T) {
	b, srv := bustest.Start(t)
	appendRun(t, b, "s", "r1", 1, 12, bus.Expect{})
	asked := lastForRequests(t, srv, "r1")
	cache := b.NewRunLogs(0)
	var mu sync.Mutex
	var got []int
	var errs []error
	consume(t, b, bus.ConsumerConfig{Name: "delivered", Filters: []string{events.KindFilter(events.KindTurnCompleted)}},
		func(ctx context.Context, d bus.Delivery) error {
			log, err := cache.LoadDelivered(ctx, d)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, err)
				return nil
			}
			for i, r := range log.Records {
				if r.Fact.Position != uint64(i+1) {
					errs = append(errs, fmt.Errorf("fact %d has position %d", i+1, r.Fact.Position))
				}
			}
			if log.LastSeq != d.Seq {
				errs = append(errs, fmt.Errorf("the load through %d ends at %d", d.Seq, log.LastSeq))
			}
			got = append(got, len(log.Records))
			return nil
		})
	testutil.Within(t, 20*time.Second, "12 deliveries", func() bool { mu.Lock(); defer mu.Unlock(); return len(got)+len(errs) >= 12 })
	mu.Lock()
	defer mu.Unlock()
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	for i, n := range got {
		if n != i+1 {
			t.Fatalf("delivery %d loaded %d facts, want %d", i+1, n, i+1)
		}
	}
	if n := asked(); n != 0 {
		t.Errorf("the loads asked where the run ends %d times, want 0", n)
	}
}

// A delivered fact written without run links (by another tool) cannot
// name what came before it: the load asks the server and scans, and
// still returns the whole run.
func TestADeliveredFactWithoutLinksIsLoadedWhole(t *testing.T) {
	ctx := testCtx(t)
	b, _ := bustest.Start(t)
	first := appendRun(t, b, "s", "r1", 1, 3, bus.Expect{})
	f := bustest.Turn(t, "s", "r1", 4, 4)
	data, _ := events.Encode(f)
	subj, _ := f.Subject()
	m := &nats.Msg{Subject: subj, Data: data, Header: nats.Header{}}
	if _, err := b.JetStream().PublishMsg(ctx, m, jetstream.WithExpectLastSequenceForSubject(first.Last, events.RunFilter("s", "r1"))); err != nil {
		t.Fatal(err)
	}
	cache := b.NewRunLogs(0)
	var mu sync.Mutex
	loaded := map[uint64]int{}
	consume(t, b, bus.ConsumerConfig{Name: "unlinked", Filters: []string{events.KindFilter(events.KindTurnCompleted)}},
		func(ctx context.Context, d bus.Delivery) error {
			log, err := cache.LoadDelivered(ctx, d)
			if err != nil {
				return err
			}
			mu.Lock()
			defer mu.Unlock()
			loaded[d.Fact.Position] = len(log.Records)
			return nil
		})
	testutil.Within(t, 20*time.Second, "4 deliveries", func() bool { mu.Lock(); defer mu.Unlock(); return len(loaded) == 4 })
	mu.Lock()
	defer mu.Unlock()
	if loaded[4] != 4 {
		t.Fatalf("the unlinked fact's load held %d facts, want 4", loaded[4])
	}
}
