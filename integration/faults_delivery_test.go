package integration

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/factline/factline/bus"
	"github.com/factline/factline/events"
	"github.com/factline/factline/ops/metrics"
	"github.com/factline/factline/services/decider"
	"github.com/factline/factline/services/grader"
	"github.com/factline/factline/services/meter"
	"github.com/factline/factline/services/runner"
	"github.com/factline/factline/services/staller"
)

// Every message is delivered at least twice: each consumer handles a
// message, then naks it instead of acknowledging, and handles it again on
// redelivery, with two instances of every service competing for the
// deliveries. Every handler must find its own effects in the log the second
// time and add nothing: the same report, the same facts, one effect.
func TestFaultEveryMessageTwiceWithTwoInstances(t *testing.T) {
	want := faultFree(t)
	srv := startServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	theSink().reset(nil)
	startFleetIn(t, ctx, fleetSpec{copies: 2, ackWait: 5 * time.Second,
		connect: connector(t, srv, bus.Config{Faults: bus.Faults{Redeliver: true}})})
	b := connector(t, srv, bus.Config{})()
	submitSuite(t, ctx, b, writeFaultSuite(t, faultTrials))
	before := redeliveries()
	got := awaitReported(t, ctx, b, "demo", nil)
	checkOutcome(t, got, want)
	// Runners, stall handlers and deciders each consume one kind; each of
	// those messages came at least twice.
	consumed := got.kinds[events.KindRunRequested] + got.kinds[events.KindTurnCompleted] + got.kinds[events.KindStallObserved]
	if n := redeliveries() - before; n < float64(consumed) {
		t.Fatalf("%v redeliveries for %d consumed facts: the fault was not injected everywhere", n, consumed)
	}
}

// Every instance of every service stalls its first delivery for longer
// than the ack wait, without heartbeats: the server gives the message to
// the other instance, and then both handle it. Optimistic concurrency and
// commit recognition leave one copy of each fact.
func TestFaultSlowConsumerPastAckWait(t *testing.T) {
	want := faultFree(t)
	srv := startServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	theSink().reset(nil)
	const ackWait = 2 * time.Second
	startFleetIn(t, ctx, fleetSpec{copies: 2, ackWait: ackWait,
		connect: connector(t, srv, bus.Config{Faults: bus.Faults{PauseOnce: ackWait + ackWait/2}})})
	b := connector(t, srv, bus.Config{})()
	submitSuite(t, ctx, b, writeFaultSuite(t, faultTrials))
	before := redeliveries()
	got := awaitReported(t, ctx, b, "demo", nil)
	checkOutcome(t, got, want)
	if n := redeliveries() - before; n == 0 {
		t.Fatal("no consumer saw a redelivery: no pause outlived the ack wait")
	}
}

// redeliveries sums the deliveries of messages delivered before, over the
// consumers of every service in this process (the metric the services
// export), so a test reads how many its fault caused.
func redeliveries() float64 {
	total := 0.0
	for _, c := range []string{runner.ConsumerName, staller.ConsumerName, decider.ConsumerName, grader.ConsumerName, meter.ConsumerName} {
		var m dto.Metric
		if err := metrics.Redeliveries.WithLabelValues(c).Write(&m); err == nil {
			total += m.GetCounter().GetValue()
		}
	}
	return total
}

// The sink applies every POST and answers it only after the call's
// timeout (the runner stays alive): each answer is lost after the request
// reached the sink. The runner must treat that as an unknown outcome,
// reconcile it under the same operation ID (the notify case's status
// lookup) and never send it again: one effect per operation, the report of
// the fault-free run.
func TestFaultLostAnswers(t *testing.T) {
	want := faultFree(t)
	srv := startServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	var held atomic.Int32
	theSink().reset(func(string) {
		held.Add(1)
		// Past the notify case's 1s http.timeout: the answer is lost.
		time.Sleep(1500 * time.Millisecond)
	})
	defer theSink().reset(nil)
	startFleetIn(t, ctx, fleetSpec{copies: 1, ackWait: 5 * time.Second, connect: connector(t, srv, bus.Config{})})
	b := connector(t, srv, bus.Config{})()
	submitSuite(t, ctx, b, writeFaultSuite(t, faultTrials))
	got := awaitReported(t, ctx, b, "demo", nil)
	checkOutcome(t, got, want)
	if held.Load() == 0 {
		t.Fatal("no POST reached the sink: the fault was not injected")
	}
	lost := 0
	for _, f := range got.facts {
		if dc, ok := f.Body.(events.DispatchCompleted); ok && dc.Dispatch.Tool == "http_call" {
			if dc.Dispatch.Outcome != events.OutcomeApplied || !strings.Contains(dc.Output, "no answer in time") {
				t.Errorf("%s: a lost answer settled %q: %s", f.Run, dc.Dispatch.Outcome, dc.Output)
			}
			lost++
		}
	}
	if lost != len(got.sink) {
		t.Errorf("%d settled calls for %d operations at the sink", lost, len(got.sink))
	}
}
