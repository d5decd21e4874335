package staller_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/factline/factline/bus"
	"github.com/factline/factline/bus/bustest"
	"github.com/factline/factline/cases"
	"github.com/factline/factline/events"
	"github.com/factline/factline/internal/testutil"
	"github.com/factline/factline/services/kit"
	"github.com/factline/factline/services/kit/kittest"
	"github.com/factline/factline/services/staller"
	"github.com/factline/factline/services/staller/stall"
)

// testConsumer keeps redelivery of messages a stopped instance had
// prefetched short, so the tests do not wait out the default ack wait.
var testConsumer = kit.WithConsumer(bus.ConsumerConfig{AckWait: 2 * time.Second, Prefetch: 2, Workers: 2})

// instance runs one staller until stop is called.
type instance struct {
	cancel context.CancelFunc
	done   chan error
}

func startInstance(b *bus.Bus, name string) *instance {
	ctx, cancel := context.WithCancel(context.Background())
	in := &instance{cancel: cancel, done: make(chan error, 1)}
	s := kittest.Must(staller.New(b, kit.WithInstance(name), testConsumer))
	go func() { in.done <- s.Run(ctx) }()
	return in
}

func (in *instance) stop(t *testing.T) {
	t.Helper()
	in.cancel()
	if err := <-in.done; err != nil {
		t.Errorf("staller stopped with %v", err)
	}
}

// scriptTurn returns the calls of turn i of the simulated runs: edits with
// failing checks, reads, and tool-free turns.
func scriptTurn(i int) []simCall {
	switch i % 3 {
	case 0:
		return []simCall{{Tool: "edit_file", Args: fmt.Sprint("edit ", i), Out: "ok", Applied: true}, {Tool: "run_command", Args: "./check.sh", Out: "FAIL", Check: "tests", Result: "fail"}}
	case 1:
		return []simCall{{Tool: "read_file", Args: "calc.go", Out: fmt.Sprint("v", i)}}
	}
	return nil
}

// Kill and restart the staller mid-stream, then run two instances at once:
// every completed turn still has exactly one stall.observed, with the
// turn's deterministic message ID and the turn.completed as its cause.
func TestEveryTurnObservedOnceAcrossRestartAndTwoInstances(t *testing.T) {
	ctx := testCtx(t)
	b, _ := bustest.Start(t)
	cd, td := publish(t, ctx, b, caseYAML, cases.StallPolicy{})
	const runs, turns = 4, 6

	first := startInstance(b, "A")
	var progress atomic.Int32
	var wg sync.WaitGroup
	errs := make(chan error, runs)
	for r := range runs {
		wg.Go(func() {
			s := newSim(b, "suite", fmt.Sprint("run-", r))
			if err := s.Request(ctx, cd, td); err != nil {
				errs <- err
				return
			}
			for i := range turns {
				n, err := s.Step(ctx, events.Continue(), scriptTurn(i+r)...)
				if err != nil {
					errs <- err
					return
				}
				// Like the runner, start the next turn only once this one
				// has been handled.
				if err := await(ctx, b, s.Suite, s.Run, func(l bus.RunLog) bool { return len(observed(l)[n]) > 0 }); err != nil {
					errs <- err
					return
				}
				progress.Add(1)
			}
		})
	}
	testutil.Within(t, time.Minute, "the first instance's progress", func() bool { return progress.Load() >= 5 })
	first.stop(t)
	second, third := startInstance(b, "B"), startInstance(b, "C")
	wg.Wait()
	second.stop(t)
	third.stop(t)
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}

	producers := map[string]int{}
	for r := range runs {
		log, err := b.LoadRun(ctx, "suite", fmt.Sprint("run-", r))
		if err != nil {
			t.Fatal(err)
		}
		obs := observed(log)
		completed := 0
		for _, rec := range log.Records {
			tc, ok := rec.Fact.Body.(events.TurnCompleted)
			if !ok {
				continue
			}
			completed++
			n := tc.Evidence.Turn
			got := obs[n]
			if len(got) != 1 {
				t.Errorf("%s turn %d: %d stall.observed, want exactly 1", log.Run, n, len(got))
				continue
			}
			if !got[0].HasMsgID(staller.MsgID(log.Run, n)) || got[0].Fact.Causation != rec.Fact.ID.String() {
				t.Errorf("%s turn %d: msg id %q causation %q", log.Run, n, got[0].MsgID, got[0].Fact.Causation)
			}
			producers[got[0].Fact.Producer.Instance]++
		}
		if completed != turns || len(obs) != turns {
			t.Errorf("%s: %d turns completed, %d observed, want %d", log.Run, completed, len(obs), turns)
		}
	}
	if producers["A"] == 0 || producers["B"]+producers["C"] == 0 {
		t.Errorf("observations by instance: %v; want some before the restart and some after", producers)
	}
	if dead, err := b.DeadLetters(ctx, staller.ConsumerName); err != nil || len(dead) > 0 {
		t.Errorf("dead letters %v (err %v)", dead, err)
	}
}

// A redelivered turn, and the same turn handled by two instances at once,
// commit one stall.observed.
func TestRedeliveryAndTwoInstancesCommitOnce(t *testing.T) {
	ctx := testCtx(t)
	b, _ := bustest.Start(t)
	cd, td := publish(t, ctx, b, caseYAML, cases.StallPolicy{})
	s := newSim(b, "suite", "run-1")
	if err := s.Request(ctx, cd, td); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Step(ctx, events.Continue()); err != nil {
		t.Fatal(err)
	}
	log, err := b.LoadRun(ctx, "suite", "run-1")
	if err != nil {
		t.Fatal(err)
	}
	last := log.Records[len(log.Records)-1]
	d := bus.Delivery{Record: last, Deliveries: 1}
	one, two := kittest.Must(staller.New(b, kit.WithInstance("one"))), kittest.Must(staller.New(b, kit.WithInstance("two")))
	var wg sync.WaitGroup
	herrs := make([]error, 2)
	for i, svc := range []*staller.Service{one, two} {
		wg.Go(func() { herrs[i] = svc.Handle(ctx, d) })
	}
	wg.Wait()
	d.Deliveries = 2
	if err := errors.Join(herrs[0], herrs[1], one.Handle(ctx, d), two.Handle(ctx, d)); err != nil {
		t.Fatal(err)
	}
	log, err = b.LoadRun(ctx, "suite", "run-1")
	if err != nil {
		t.Fatal(err)
	}
	if got := observed(log)[1]; len(got) != 1 {
		t.Fatalf("%d stall.observed for turn 1, want 1", len(got))
	}
}

// The shell applies the run's case policy: two tool-free turns in a row
// (idle_turns 2 in the case) with no repair budget stop the run, listing
// the case's unmet check.
func TestShellAppliesCasePolicy(t *testing.T) {
	ctx := testCtx(t)
	b, _ := bustest.Start(t)
	cd, td := publish(t, ctx, b, caseYAML, cases.StallPolicy{})
	in := startInstance(b, "A")
	defer in.stop(t)
	s := newSim(b, "suite", "run-1")
	if err := s.Request(ctx, cd, td); err != nil {
		t.Fatal(err)
	}
	var last events.StallObservation
	for range 2 {
		n, err := s.Step(ctx, events.Continue())
		if err != nil {
			t.Fatal(err)
		}
		if err := await(ctx, b, s.Suite, s.Run, func(l bus.RunLog) bool {
			got := observed(l)[n]
			if len(got) > 0 {
				last = got[0].Fact.Body.(events.StallObserved).Observation
			}
			return len(got) > 0
		}); err != nil {
			t.Fatal(err)
		}
	}
	if last.Action == nil {
		t.Fatal("no action after two idle turns")
	}
	st, ok := last.Action.Variant().(events.StallStop)
	if !ok || st.Cause != stall.PatternIdleTurns || !slices.Equal(st.Unmet, []events.RequirementID{"tests"}) {
		t.Errorf("action %s %+v", last.Action.Type(), last.Action.Variant())
	}
}

// A run without run.requested, or whose case blob is missing, cannot be
// observed by any retry: the turn is dead-lettered with the reason and no
// observation is invented.
func TestUnknownCaseIsDeadLettered(t *testing.T) {
	ctx := testCtx(t)
	b, _ := bustest.Start(t)
	in := startInstance(b, "A")
	defer in.stop(t)

	orphan := newSim(b, "suite", "no-request")
	if err := orphan.Commit(ctx, "claimed", events.OwnerRunner, events.RunClaimed{Runner: "sim", Lease: 1}); err != nil {
		t.Fatal(err)
	}
	if _, err := orphan.Step(ctx, events.Continue()); err != nil {
		t.Fatal(err)
	}
	missing := newSim(b, "suite", "no-blob")
	if err := missing.Request(ctx, events.DigestOf([]byte("never stored")), events.DigestOf([]byte("nor this"))); err != nil {
		t.Fatal(err)
	}
	if _, err := missing.Step(ctx, events.Continue()); err != nil {
		t.Fatal(err)
	}

	var dead []bus.DeadLetter
	testutil.Within(t, time.Minute, "the dead letters", func() bool {
		var err error
		if dead, err = b.DeadLetters(ctx, staller.ConsumerName); err != nil {
			t.Fatal(err)
		}
		return !(len(dead) < 2)
	})
	if len(dead) != 2 {
		t.Fatalf("%d dead letters, want 2", len(dead))
	}
	reasons := dead[0].Reason + "\n" + dead[1].Reason
	if !strings.Contains(reasons, "no run.requested") || !strings.Contains(reasons, "blob not found") {
		t.Errorf("reasons:\n%s", reasons)
	}
	for _, d := range dead {
		if d.Deliveries != 1 {
			t.Errorf("%s was retried %d times; a permanent error is dead-lettered at once", d.Subject, d.Deliveries)
		}
	}
	for _, run := range []string{"no-request", "no-blob"} {
		log, err := b.LoadRun(ctx, "suite", run)
		if err != nil {
			t.Fatal(err)
		}
		if len(observed(log)) != 0 {
			t.Errorf("%s: an observation was invented", run)
		}
	}
}

// Every threshold is case policy with documented defaults, and a treatment
// overrides the case field by field.
func TestPolicyFromCaseAndTreatment(t *testing.T) {
	c, err := cases.ParseCase("case.yaml", []byte(`
id: c
instruction: do it
requires_write: true
checks:
  - id: tests
    command: go test ./...
  - id: lint
    command: go vet ./...
    required: false
requirements:
  - id: docs
stall:
  repeated_failure: 4
  idle_turns: 0
`))
	if err != nil {
		t.Fatal(err)
	}
	five := 5
	tr := &cases.Treatment{ID: "t", Model: cases.ModelSpec{Provider: cases.ProviderOpenAI, Name: "m"},
		Stall: cases.StallPolicy{RepeatedFailure: &five, EscalateTo: "human-review"}}
	p := staller.PolicyFrom(cases.Apply(c, tr))
	d := cases.DefaultStall
	if p.RepeatedFailure != 5 || p.IdleTurns != 0 || p.EscalateTo != "human-review" ||
		p.RepeatedObservation != d.RepeatedObservation || p.RepeatedError != d.RepeatedError || p.Alternation != d.Alternation ||
		p.FailingVerifications != d.FailingVerifications || p.RepairBudget != d.RepairBudget {
		t.Errorf("policy %+v", p)
	}
	want := []stall.Requirement{{ID: "docs"}, {ID: "tests", Check: "tests"}, {ID: stall.WriteRequirement, Write: true}}
	if !slices.Equal(p.Requirements, want) {
		t.Errorf("requirements %+v, want %+v", p.Requirements, want)
	}
	if p := staller.PolicyFrom(cases.Apply(c, nil)); p.RepeatedFailure != 4 || p.EscalateTo != "" {
		t.Errorf("case alone: %+v", p)
	}
}

// No owner appends to a run after its run.ended: a turn.completed the
// staller gets for a run that has ended since is answered with nothing.
func TestNothingObservedAfterTheRunEnded(t *testing.T) {
	ctx := testCtx(t)
	b, _ := bustest.Start(t)
	cd, td := publish(t, ctx, b, caseYAML, cases.StallPolicy{})
	ended, live := newSim(b, "suite", "ended"), newSim(b, "suite", "live")
	for _, s := range []*sim{ended, live} {
		if err := s.Request(ctx, cd, td); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Step(ctx, events.Continue(), scriptTurn(1)...); err != nil {
			t.Fatal(err)
		}
	}
	if err := ended.Commit(ctx, "ended", events.OwnerRunner, events.RunEnded{Status: events.RunCancelled, Reason: "cancelled"}); err != nil {
		t.Fatal(err)
	}
	in := startInstance(b, "A")
	defer in.stop(t)
	if err := await(ctx, b, "suite", "live", func(l bus.RunLog) bool { return len(observed(l)[1]) > 0 }); err != nil {
		t.Fatal(err)
	}
	bustest.Drained(t, ctx, b, staller.ConsumerName)
	log, err := b.LoadRun(ctx, "suite", "ended")
	if err != nil {
		t.Fatal(err)
	}
	if n := len(observed(log)); n != 0 {
		t.Fatalf("the staller observed %d turns of a run that had ended", n)
	}
}
