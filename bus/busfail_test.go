package bus_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/factline/factline/bus"
	"github.com/factline/factline/bus/bustest"
	"github.com/factline/factline/events"
	"github.com/factline/factline/internal/testutil"
	"github.com/factline/factline/ops/metrics"
)

// Tests of the bus itself failing under factline: a full store, a server
// restart, a stream lost.

// limitedServer starts an embedded server whose file store JetStream caps
// at maxStore (its own storage limit, as max_file_store in a
// nats-server configuration).
func limitedServer(t *testing.T, maxStore string) *bus.Embedded {
	t.Helper()
	conf := filepath.Join(t.TempDir(), "limits.conf")
	if err := os.WriteFile(conf, []byte("jetstream {\n  max_file_store: "+maxStore+"\n}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return bustest.Server(t, bus.EmbeddedConfig{ConfigFile: conf})
}

// filler takes up a store's space with a stream of its own, as other data
// on the same disk would; free purges it.
type filler struct {
	t  *testing.T
	js jetstream.JetStream
}

// fill writes to the FILLER stream until JetStream refuses a write for
// want of space.
func fill(t *testing.T, ctx context.Context, js jetstream.JetStream) *filler {
	t.Helper()
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "FILLER", Subjects: []string{"filler.>"}, Storage: jetstream.FileStorage}); err != nil {
		t.Fatal(err)
	}
	chunk := make([]byte, 64<<10)
	for i := 0; ; i++ {
		_, err := js.Publish(ctx, fmt.Sprintf("filler.%d", i), chunk)
		if bus.StoreFull(err) {
			return &filler{t: t, js: js}
		}
		if err != nil {
			t.Fatalf("fill the store: %v", err)
		}
		if i > 10000 {
			t.Fatal("the store never filled")
		}
	}
}

func (f *filler) free(ctx context.Context) {
	f.t.Helper()
	s, err := f.js.Stream(ctx, "FILLER")
	if err == nil {
		err = s.Purge(ctx)
	}
	if err != nil {
		f.t.Fatalf("free the store: %v", err)
	}
}

// A handler that fails because the bus failed under it (a stream not
// found, no responders, a full store) is tried again in place until the
// bus is back: the message's delivery budget, meant for poison, is not
// spent, nothing is dead-lettered, and the retries are counted by cause.
func TestBusFailuresSpendNoDeliveries(t *testing.T) {
	ctx := testCtx(t)
	b, _ := bustest.Start(t)
	infra := func() []error {
		_, notFound := b.JetStream().Stream(ctx, "NO-SUCH-STREAM")
		full := &jetstream.APIError{Code: 503, ErrorCode: 10023, Description: "insufficient resources"}
		return []error{notFound, fmt.Errorf("append: %w", nats.ErrNoResponders), fmt.Errorf("append: %w", full), fmt.Errorf("load: %w", notFound)}
	}()
	if !errors.Is(infra[0], jetstream.ErrStreamNotFound) {
		t.Fatalf("looking up a missing stream: %v", infra[0])
	}
	before := counterValue(t, "factline_bus_infra_retries_total", `consumer="flaky-bus"`)
	var mu sync.Mutex
	var deliveries []uint64
	consume(t, b, bus.ConsumerConfig{Name: "flaky-bus", Filters: []string{events.KindFilter(events.KindRunClaimed)}, MaxDeliver: 2, AckWait: time.Second},
		func(ctx context.Context, d bus.Delivery) error {
			mu.Lock()
			defer mu.Unlock()
			deliveries = append(deliveries, d.Deliveries)
			if n := len(deliveries); n <= len(infra) {
				return infra[n-1]
			}
			return nil
		})
	if _, err := b.Append(ctx, bus.Expect{}, bus.Pending{Fact: bustest.Claim(t, "s", "r1", 1)}); err != nil {
		t.Fatal(err)
	}
	testutil.Within(t, 20*time.Second, "the handler to succeed", func() bool { mu.Lock(); defer mu.Unlock(); return len(deliveries) > len(infra) })
	testutil.Within(t, 20*time.Second, "the message to be acknowledged", func() bool { return ackPending(t, ctx, b, "flaky-bus") == 0 })
	mu.Lock()
	defer mu.Unlock()
	for i, n := range deliveries {
		if n != 1 {
			t.Fatalf("call %d saw delivery %d; every call should be the first delivery (%v)", i+1, n, deliveries)
		}
	}
	if len(deliveries) != len(infra)+1 {
		t.Fatalf("handler called %d times, want %d", len(deliveries), len(infra)+1)
	}
	if dead, _ := b.DeadLetters(ctx, "flaky-bus"); len(dead) != 0 {
		t.Fatalf("dead-lettered for failures of the bus: %+v", dead)
	}
	if got := counterValue(t, "factline_bus_infra_retries_total", `consumer="flaky-bus"`) - before; got != float64(len(infra)) {
		t.Fatalf("%v retries counted, want %d", got, len(infra))
	}
}

// A poison message whose dead letter cannot be written because the store
// is full is neither acknowledged, termed nor given up on by the server:
// it stays pending, the bus reports the full store, and once space is
// freed the dead letter lands and only then is the message settled.
func TestADeadLetterWaitsForAFullStore(t *testing.T) {
	// Parallel: it mostly waits on a server of its own. The store-full
	// gauge it sets is read only by serial tests, which have all ended
	// before a parallel one starts.
	t.Parallel()
	ctx := testCtx(t)
	srv := limitedServer(t, "2MB")
	b := bustest.OpenWith(t, srv, bus.Config{})
	if _, err := b.Append(ctx, bus.Expect{}, bus.Pending{Fact: bustest.Claim(t, "s", "poison", 1)}); err != nil {
		t.Fatal(err)
	}
	f := fill(t, ctx, b.JetStream())
	var calls atomic.Int32
	consume(t, b, bus.ConsumerConfig{Name: "strict", Filters: []string{events.KindFilter(events.KindRunClaimed)}, MaxDeliver: 1, AckWait: time.Second},
		func(ctx context.Context, d bus.Delivery) error {
			calls.Add(1)
			return bus.Permanent(errors.New("case file is invalid"))
		})
	testutil.Within(t, 20*time.Second, "the bus to report the full store", func() bool { return errors.Is(b.Health(), bus.ErrStoreFull) })
	// Several ack waits pass with the dead letter refused.
	time.Sleep(3 * time.Second)
	if n := ackPending(t, ctx, b, "strict"); n != 1 {
		t.Fatalf("%d messages pending an ack while the dead letter could not be written, want 1 (held, not settled)", n)
	}
	f.free(ctx)
	var dead []bus.DeadLetter
	testutil.Within(t, 20*time.Second, "the dead letter once space is free", func() bool {
		var err error
		dead, err = b.DeadLetters(ctx, "strict")
		return err == nil && len(dead) == 1
	})
	if !strings.Contains(dead[0].Reason, "case file is invalid") {
		t.Fatalf("dead letter reason %q", dead[0].Reason)
	}
	testutil.Within(t, 20*time.Second, "the message settled", func() bool { return ackPending(t, ctx, b, "strict") == 0 })
	testutil.Within(t, 20*time.Second, "the bus to report the store healthy", func() bool { return b.Health() == nil })
}

// What a service records when it gives up on a message (a runner ends the
// run errored) is tried again while the bus fails under it, before the
// message is settled: otherwise the run would wait for ever.
func TestAGiveUpIsRecordedOnceTheBusIsBack(t *testing.T) {
	ctx := testCtx(t)
	b, _ := bustest.Start(t)
	var records atomic.Int32
	var recorded atomic.Bool
	consume(t, b, bus.ConsumerConfig{Name: "giver", Filters: []string{events.KindFilter(events.KindRunClaimed)}, MaxDeliver: 1, AckWait: time.Second,
		OnDeadLetter: func(ctx context.Context, d bus.Delivery, reason string) error {
			if records.Add(1) <= 2 {
				return fmt.Errorf("append run.ended: %w", nats.ErrNoResponders)
			}
			recorded.Store(true)
			return nil
		}},
		func(ctx context.Context, d bus.Delivery) error {
			return bus.Permanent(errors.New("case file is invalid"))
		})
	if _, err := b.Append(ctx, bus.Expect{}, bus.Pending{Fact: bustest.Claim(t, "s", "r1", 1)}); err != nil {
		t.Fatal(err)
	}
	testutil.Within(t, 20*time.Second, "the give-up recorded", recorded.Load)
	testutil.Within(t, 20*time.Second, "the message settled", func() bool { return ackPending(t, ctx, b, "giver") == 0 })
	if n := records.Load(); n != 3 {
		t.Fatalf("recorded %d times, want 3 (two failures of the bus, then done)", n)
	}
	if dead, _ := b.DeadLetters(ctx, "giver"); len(dead) != 1 {
		t.Fatalf("%d dead letters, want 1", len(dead))
	}
}

// Messages fetched ahead of a worker whose every message takes longer than
// an ack wait are kept alive while they wait their turn: each is delivered
// once, not again and again until its budget is spent.
func TestQueuedDeliveriesAreKeptAlive(t *testing.T) {
	ctx := testCtx(t)
	b, _ := bustest.Start(t)
	var mu sync.Mutex
	deliveries := map[string][]uint64{}
	consume(t, b, bus.ConsumerConfig{Name: "queued", Filters: []string{events.KindFilter(events.KindTurnCompleted)},
		AckWait: time.Second, Workers: 1, Prefetch: 4},
		func(ctx context.Context, d bus.Delivery) error {
			mu.Lock()
			deliveries[d.Fact.Run] = append(deliveries[d.Fact.Run], d.Deliveries)
			mu.Unlock()
			time.Sleep(1200 * time.Millisecond) // longer than an ack wait, kept alive by heartbeats
			return nil
		})
	runs := []string{"r1", "r2", "r3", "r4", "r5", "r6"}
	for _, run := range runs {
		if _, err := b.Append(ctx, bus.Expect{}, bus.Pending{Fact: bustest.Turn(t, "s", run, 1, 1)}); err != nil {
			t.Fatal(err)
		}
	}
	testutil.Within(t, 20*time.Second, "every message", func() bool { mu.Lock(); defer mu.Unlock(); return len(deliveries) == len(runs) })
	testutil.Within(t, 20*time.Second, "every message acknowledged", func() bool { return ackPending(t, ctx, b, "queued") == 0 })
	mu.Lock()
	defer mu.Unlock()
	for _, run := range runs {
		if got := deliveries[run]; len(got) != 1 || got[0] != 1 {
			t.Errorf("%s: deliveries %v, want [1]", run, got)
		}
	}
}

// A control signal whose body names another signal than its subject (a
// cancel sent on ctl.….steer) is refused: never delivered, dead-lettered
// with the reason; the next valid signal still arrives.
func TestAControlSignalIsWhatItsSubjectSays(t *testing.T) {
	ctx := testCtx(t)
	b, _ := bustest.Start(t)
	wctx, stop := context.WithCancel(ctx)
	defer stop()
	sigs, err := b.Controls().Watch(wctx, "s", "r1")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.JetStream().Publish(ctx, "ctl.s.r1.steer", []byte(`{"id":"sneaky","signal":"cancel","reason":"smuggled"}`)); err != nil {
		t.Fatal(err)
	}
	if err := b.Controls().Send(ctx, "s", "r1", events.Control{ID: "real", Signal: events.SignalSteer, Instruction: "also add tests"}); err != nil {
		t.Fatal(err)
	}
	select {
	case c := <-sigs:
		if c.ID != "real" || c.Signal != events.SignalSteer {
			t.Fatalf("delivered %+v; the mismatched signal must be refused and the steer delivered", c)
		}
	case <-ctx.Done():
		t.Fatal("no signal delivered")
	}
	var dead []bus.DeadLetter
	testutil.Within(t, 20*time.Second, "the refused signal's dead letter", func() bool {
		dead, err = b.DeadLetters(ctx, bus.ControlConsumer)
		return err == nil && len(dead) == 1
	})
	d := dead[0]
	if d.Stream != bus.ControlStream || d.Subject != "ctl.s.r1.steer" || !strings.Contains(d.Reason, `"cancel"`) || !strings.Contains(d.Reason, "steer") {
		t.Fatalf("dead letter %+v (reason %q) does not say what was refused and why", d, d.Reason)
	}
}

// A control watch outlives CONTROL being lost: the bus makes the stream
// again, and a signal sent afterwards reaches the watch.
func TestAControlWatchOutlivesLosingControl(t *testing.T) {
	ctx := testCtx(t)
	b, _ := bustest.Start(t)
	wctx, stop := context.WithCancel(ctx)
	defer stop()
	sigs, err := b.Controls().Watch(wctx, "s", "r1")
	if err != nil {
		t.Fatal(err)
	}
	steer := func(id string) {
		t.Helper()
		// Until CONTROL is back, a signal has no stream to go to.
		testutil.Within(t, 20*time.Second, "CONTROL to take "+id, func() bool {
			return b.Controls().Send(ctx, "s", "r1", events.Control{ID: id, Signal: events.SignalSteer, Instruction: id}) == nil
		})
	}
	receive := func(id string) {
		t.Helper()
		select {
		case c := <-sigs:
			if c.ID != id {
				t.Fatalf("got %s, want %s", c.ID, id)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("%s never arrived", id)
		}
	}
	steer("before")
	receive("before")
	if err := b.JetStream().DeleteStream(ctx, bus.ControlStream); err != nil {
		t.Fatal(err)
	}
	steer("after")
	receive("after")
}

// CONTROL outlives a server restart: a signal sent before it is still
// there after it, for a watch started after it; a watch that runs through
// the restart delivers the next signal, and none twice.
func TestControlOutlivesARestart(t *testing.T) {
	ctx := testCtx(t)
	r := bustest.StartRestartable(t)
	b := r.Dial(ctx)
	through, err := b.Controls().Watch(ctx, "s", "r1")
	if err != nil {
		t.Fatal(err)
	}
	receive := func(sigs <-chan events.Control, id string) {
		t.Helper()
		select {
		case c := <-sigs:
			if c.ID != id {
				t.Fatalf("got %s, want %s", c.ID, id)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("%s never arrived", id)
		}
	}
	if err := b.Controls().Send(ctx, "s", "r1", events.Control{ID: "c1", Signal: events.SignalCancel, Reason: "wrong case"}); err != nil {
		t.Fatal(err)
	}
	receive(through, "c1")
	r.Restart()
	testutil.Within(t, 20*time.Second, "the reconnect", b.Conn().IsConnected)
	s, err := b.JetStream().Stream(ctx, bus.ControlStream)
	if err != nil {
		t.Fatalf("CONTROL after a restart: %v", err)
	}
	if st := s.CachedInfo().Config.Storage; st != jetstream.FileStorage {
		t.Fatalf("CONTROL is kept in %s", st)
	}
	after, err := b.Controls().Watch(ctx, "s", "r1")
	if err != nil {
		t.Fatal(err)
	}
	receive(after, "c1")
	if err := b.Controls().Send(ctx, "s", "r1", events.Control{ID: "c2", Signal: events.SignalSteer, Instruction: "and the docs"}); err != nil {
		t.Fatal(err)
	}
	receive(after, "c2")
	receive(through, "c2")
}

// A CONTROL kept in memory, as factline made it before, is used as it is;
// when a restart loses it, the bus makes it again (on file) as soon as it
// is connected again, without anyone rerunning setup.
func TestALostControlIsMadeAgainAfterAReconnect(t *testing.T) {
	ctx := testCtx(t)
	r := bustest.StartRestartable(t)
	makeMemoryControl(t, ctx, r)
	b := r.Dial(ctx)
	r.Restart()
	var s jetstream.Stream
	testutil.Within(t, 20*time.Second, "CONTROL made again", func() bool {
		// One look is bounded: a request caught in the reconnect must
		// not spend the whole wait.
		cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		var err error
		s, err = b.JetStream().Stream(cctx, bus.ControlStream)
		return err == nil
	})
	if st := s.CachedInfo().Config.Storage; st != jetstream.FileStorage {
		t.Fatalf("CONTROL was made again in %s", st)
	}
	if err := b.Health(); err != nil {
		t.Fatalf("health after CONTROL came back: %v", err)
	}
}

// A full store shows to a writer: CheckWritable says so (ErrStoreFull),
// Health reports it and factline_bus_store_full is 1; once space is freed
// all three clear.
func TestAFullStoreIsReportedAndClears(t *testing.T) {
	ctx := testCtx(t)
	srv := limitedServer(t, "2MB")
	b := bustest.OpenWith(t, srv, bus.Config{})
	if err := b.CheckWritable(ctx); err != nil {
		t.Fatalf("a store with room: %v", err)
	}
	f := fill(t, ctx, b.JetStream())
	err := b.CheckWritable(ctx)
	if !errors.Is(err, bus.ErrStoreFull) {
		t.Fatalf("CheckWritable on a full store: %v, want ErrStoreFull", err)
	}
	if err := b.Health(); !errors.Is(err, bus.ErrStoreFull) {
		t.Fatalf("Health on a full store: %v", err)
	}
	if v := gaugeValue(t, "factline_bus_store_full"); v != 1 {
		t.Fatalf("factline_bus_store_full = %v on a full store", v)
	}
	f.free(ctx)
	if err := b.CheckWritable(ctx); err != nil {
		t.Fatalf("CheckWritable once space is free: %v", err)
	}
	if err := b.Health(); err != nil {
		t.Fatalf("Health once space is free: %v", err)
	}
	if v := gaugeValue(t, "factline_bus_store_full"); v != 0 {
		t.Fatalf("factline_bus_store_full = %v once space is free", v)
	}
}

// ackPending is how many of a consumer's deliveries await an ack.
func ackPending(t *testing.T, ctx context.Context, b *bus.Bus, consumer string) int {
	t.Helper()
	c, err := b.JetStream().Consumer(ctx, bus.FactsStream, consumer)
	if err != nil {
		t.Fatal(err)
	}
	info, err := c.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return info.NumAckPending
}

// counterValue sums a metric's series whose labels include match.
func counterValue(t *testing.T, name, match string) float64 {
	t.Helper()
	families, err := metrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	sum := 0.0
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			labels := ""
			for _, l := range m.GetLabel() {
				labels += fmt.Sprintf("%s=%q,", l.GetName(), l.GetValue())
			}
			if strings.Contains(labels, match) {
				sum += m.GetCounter().GetValue() + m.GetGauge().GetValue()
			}
		}
	}
	return sum
}

func gaugeValue(t *testing.T, name string) float64 { return counterValue(t, name, "") }

// makeMemoryControl makes CONTROL in memory, as factline made it before.
func makeMemoryControl(t *testing.T, ctx context.Context, r *bustest.Restartable) {
	t.Helper()
	nc, err := nats.Connect("nats://" + r.Config.Listen)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: bus.ControlStream, Subjects: []string{"ctl.>", "status.>"},
		Storage: jetstream.MemoryStorage, MaxAge: 10 * time.Minute, Duplicates: 2 * time.Minute, AllowDirect: true, MaxMsgsPerSubject: 1000}); err != nil {
		t.Fatal(err)
	}
}

// The keeper may start late on a busy machine: a reconnect that happened
// before it ran still has CONTROL made again.
func TestAReconnectBeforeTheKeeperRunsStillMakesControlAgain(t *testing.T) {
	ctx := testCtx(t)
	r := bustest.StartRestartable(t)
	makeMemoryControl(t, ctx, r)
	release := make(chan struct{})
	restore := bus.HoldKeeping(release)
	b := r.Dial(ctx)
	restore()
	r.Restart()
	testutil.Within(t, 20*time.Second, "reconnected", func() bool { return b.Conn().IsConnected() })
	close(release)
	testutil.Within(t, 20*time.Second, "CONTROL made again", func() bool {
		cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		_, err := b.JetStream().Stream(cctx, bus.ControlStream)
		return err == nil
	})
}
