package runner_test

import (
	"cmp"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/factline/factline/bus"
	"github.com/factline/factline/bus/bustest"
	"github.com/factline/factline/cases"
	"github.com/factline/factline/events"
	"github.com/factline/factline/fleet/fleettest"
	"github.com/factline/factline/services/kit"
	"github.com/factline/factline/services/runner"
)

// A run whose request was delivered more often than the runner's limit
// without an answer (every runner that took it died) is dead-lettered, and
// the runner that sees it last ends the run as errored, naming why, instead
// of leaving it unended forever.
func TestRunnerGivesUpOnAPoisonRequest(t *testing.T) {
	t.Parallel()
	// 0 is the default bound, 5; 2 is one set with --max-deliver.
	for _, max := range []int{0, 2} {
		t.Run(fmt.Sprintf("max-deliver-%d", max), func(t *testing.T) { givesUpAfter(t, max) })
	}
}

func givesUpAfter(t *testing.T, maxDeliver int) {
	bound := cmp.Or(maxDeliver, 5)
	b, _ := bustest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	newRunner, cons := stoppedRunner(t, ctx, b, maxDeliver)

	p, err := fleettest.Publish(ctx, b, fixtureCase(t, "{steps: 4}"), treatment(t, "turns: []\n"))
	must(t, err)
	must(t, fleettest.Request(ctx, b, "suite", "poison", p, 1))
	poison(t, cons, bound)
	rctx, stopRunner := context.WithCancel(ctx)
	defer stopRunner()
	go func() { _ = newRunner().Run(rctx) }()
	_, end, err := fleettest.WaitEnded(ctx, b, "suite", "poison")
	must(t, err)
	if end.Status != events.RunErrored || !strings.Contains(end.Reason, "gave up") || !strings.Contains(end.Reason, fmt.Sprintf("delivered %d times", bound+1)) {
		t.Fatalf("ended %s %q, want errored naming the give-up", end.Status, end.Reason)
	}
	dl, err := b.DeadLetters(ctx, runner.ConsumerName)
	must(t, err)
	if len(dl) != 1 {
		t.Fatalf("%d dead letters, want the request", len(dl))
	}
}

// waitConsumer waits until the durable consumer exists.
func waitConsumer(t *testing.T, ctx context.Context, b *bus.Bus, name string) jetstream.Consumer {
	t.Helper()
	for {
		c, err := b.JetStream().Consumer(ctx, bus.FactsStream, name)
		if err == nil {
			return c
		}
		if ctx.Err() != nil {
			t.Fatalf("consumer %s never appeared: %v", name, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// poison plays as many runners as the bound: each takes the request and
// dies before answering.
func poison(t *testing.T, cons jetstream.Consumer, bound int) {
	t.Helper()
	for i := range bound {
		batch, err := cons.Fetch(1, jetstream.FetchMaxWait(10*time.Second))
		must(t, err)
		n := 0
		for m := range batch.Messages() {
			n++
			must(t, m.Nak())
		}
		if n != 1 {
			t.Fatalf("delivery %d: got %d messages", i+1, n)
		}
	}
}

// A run given up on settles what it started: every call of its last reply
// gets a dispatch.completed (the one never started not_run, the external
// one in flight unknown), and a run that may have made an external effect
// ends needs_human naming the operation, not errored.
func TestGivingUpSettlesWhatTheRunStarted(t *testing.T) {
	t.Parallel()
	b, _ := bustest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	newRunner, cons := stoppedRunner(t, ctx, b, 2)

	kase := fixtureCase(t, "{steps: 4}")
	kase.HTTP = &cases.HTTPPolicy{Allow: []string{"http://127.0.0.1:9/"}}
	kase.Tools = append(kase.Tools, "http_call")
	p, err := fleettest.Publish(ctx, b, kase, treatment(t, "turns: []\n"))
	must(t, err)
	const run = "gave-up"
	must(t, fleettest.Request(ctx, b, "suite", run, p, 1))
	// The log of a runner that died with the order in flight.
	sim := fleettest.NewSim(b, "suite", run)
	args := `{"url":"http://127.0.0.1:9/orders","body":"{}"}`
	calls := []events.ToolCall{
		{ID: "order", Name: "http_call", Args: args, ArgsDigest: events.DigestOf([]byte(args))},
		{ID: "note", Name: "write_file", Args: `{"path":"n","content":"x"}`, ArgsDigest: events.DigestOf([]byte(`{"path":"n","content":"x"}`))},
	}
	must(t, sim.Commit(ctx, "claimed", events.OwnerRunner, events.RunClaimed{Runner: "dead", Lease: 1}))
	must(t, sim.Commit(ctx, "started", events.OwnerRunner, events.TurnStarted{Turn: 1, ContextDigest: events.DigestOf([]byte("ctx"))}))
	must(t, sim.Commit(ctx, "replied", events.OwnerRunner, events.ModelReplied{Turn: 1, Provider: "scripted", Calls: calls}))
	must(t, sim.Commit(ctx, "intended", events.OwnerRunner, events.DispatchIntended{Turn: 1, CallID: "order", Tool: "http_call",
		OperationID: run + "/t1/order", ArgsDigest: calls[0].ArgsDigest, Effect: events.EffectExternal}))
	poison(t, cons, 2)
	rctx, stopRunner := context.WithCancel(ctx)
	defer stopRunner()
	go func() { _ = newRunner().Run(rctx) }()
	log, end, err := fleettest.WaitEnded(ctx, b, "suite", run)
	must(t, err)
	if end.Status != events.RunNeedsHuman || !strings.Contains(end.Reason, "gave up") || !strings.Contains(end.Reason, run+"/t1/order") {
		t.Fatalf("ended %s %q, want needs_human naming the give-up and the operation", end.Status, end.Reason)
	}
	ds := dispatches(log)
	if d := ds["t1/order"]; d.Dispatch.Outcome != events.OutcomeUnknown || d.Dispatch.Disposition != events.DispositionCanceled {
		t.Fatalf("the order in flight settled %+v, want canceled with an unknown outcome", d.Dispatch)
	}
	if d := ds["t1/note"]; d.Dispatch.Disposition != events.DispositionNotRun {
		t.Fatalf("the call never started settled %+v, want not_run", d.Dispatch)
	}
	assertNoTurnAfter(t, log)
}

// stoppedRunner returns how to make runners with a short ack wait and the
// given delivery bound, and the durable consumer they share: a first
// runner made it and stopped, so that the test plays the dying runners.
func stoppedRunner(t *testing.T, ctx context.Context, b *bus.Bus, maxDeliver int) (func() *runner.Service, jetstream.Consumer) {
	t.Helper()
	newRunner := func() *runner.Service {
		svc, err := runner.New(b, runner.WithWorkDir(t.TempDir()), runner.WithDecisionTimeout(time.Minute),
			kit.WithConsumer(bus.ConsumerConfig{AckWait: runner.MinAckWait, MaxDeliver: maxDeliver}))
		must(t, err)
		return svc
	}
	first, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { _ = newRunner().Run(first); close(done) }()
	cons := waitConsumer(t, ctx, b, runner.ConsumerName)
	stop()
	<-done
	return newRunner, cons
}
