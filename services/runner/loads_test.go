package runner_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/factline/factline/bus"
	"github.com/factline/factline/bus/bustest"
	"github.com/factline/factline/events"
	"github.com/factline/factline/fleet/fleettest"
	"github.com/factline/factline/services/kit"
	"github.com/factline/factline/services/runner"
)

// Between the facts of a turn the runner is the run's only writer: each
// step decides on the log as its own commits left it, and a stale view is
// refused by the next append's expected sequence (a takeover's claim). It
// asks the server where the run ends only when it waits for another
// service's fact: the turn's stop decision (before it subscribes, and on
// the wake). It used to ask before every step as well: 7 asks a turn
// instead of 2.
func TestARunnerAsksWhereTheRunEndsOnlyToAwaitADecision(t *testing.T) {
	t.Parallel()
	const turns = 5
	srv := bustest.Server(t, bus.EmbeddedConfig{})
	b := bustest.OpenWith(t, srv, bus.Config{})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	// The runner's own connection, whose replies come to _RUNNER.>, so
	// that its requests are told from the decider's.
	rnc, err := srv.Connect(nats.CustomInboxPrefix("_RUNNER"))
	must(t, err)
	defer rnc.Close()
	rb, err := bus.Open(ctx, rnc, bus.Config{})
	must(t, err)
	var asked atomic.Int32
	mon, err := srv.Connect()
	must(t, err)
	defer mon.Close()
	_, err = mon.Subscribe("$JS.API.DIRECT.GET."+bus.FactsStream, func(m *nats.Msg) {
		var req struct {
			LastFor string `json:"last_by_subj"`
		}
		if strings.HasPrefix(m.Reply, "_RUNNER.") && json.Unmarshal(m.Data, &req) == nil && req.LastFor == events.RunFilter("suite", "asks") {
			asked.Add(1)
		}
	})
	must(t, err)
	must(t, mon.Flush())

	svc, err := runner.New(rb, runner.WithWorkDir(t.TempDir()), kit.WithWorkers(2), runner.WithDecisionTimeout(time.Minute))
	must(t, err)
	rctx, stop := context.WithCancel(ctx)
	done := make(chan struct{}, 2)
	go func() { _ = svc.Run(rctx); done <- struct{}{} }()
	go func() { _ = fleettest.Decider{Bus: b}.Run(rctx); done <- struct{}{} }()
	defer func() { stop(); <-done; <-done }()

	var turnsYAML []string
	for range turns - 1 {
		turnsYAML = append(turnsYAML, "  - calls: [{name: read_file, args: {path: answer.txt}}]\n")
	}
	turnsYAML = append(turnsYAML, "  - text: done\n")
	p, err := fleettest.Publish(ctx, b, fixtureCase(t, "{steps: 10}"), treatment(t, script(turnsYAML...)))
	must(t, err)
	must(t, fleettest.Request(ctx, b, "suite", "asks", p, 1))
	log, end, err := fleettest.WaitEnded(ctx, b, "suite", "asks")
	must(t, err)
	if end.Status == events.RunErrored {
		t.Fatalf("run ended %s: %s", end.Status, end.Reason)
	}
	if n := len(kinds(log, events.KindTurnStarted)); n != turns {
		t.Fatalf("%d turns, want %d", n, turns)
	}
	must(t, mon.Flush())
	// Two a turn to await its decision, and a few at the run's start and
	// end (the claim, settling and ending); a wake that comes before the
	// decision is served adds a look again, rarely.
	if n := int(asked.Load()); n > 2*turns+6 {
		t.Fatalf("the runner asked where the run ends %d times in %d turns, want at most %d", n, turns, 2*turns+6)
	}
}
