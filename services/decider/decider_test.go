package decider_test

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
	"github.com/factline/factline/services/decider"
	"github.com/factline/factline/services/decider/stop"
	"github.com/factline/factline/services/kit"
	"github.com/factline/factline/services/kit/kittest"
)

// testConsumer keeps redelivery of messages a stopped instance had
// prefetched short, so the tests do not wait out the default ack wait.
var testConsumer = kit.WithConsumer(bus.ConsumerConfig{AckWait: 2 * time.Second, Prefetch: 2, Workers: 2})

type instance struct {
	cancel context.CancelFunc
	done   chan error
}

func startInstance(b *bus.Bus, name string, opts ...kit.Option) *instance {
	ctx, cancel := context.WithCancel(context.Background())
	in := &instance{cancel: cancel, done: make(chan error, 1)}
	s := kittest.Must(decider.New(b, append([]kit.Option{kit.WithInstance(name), testConsumer}, opts...)...))
	go func() { in.done <- s.Run(ctx) }()
	return in
}

func (in *instance) stop(t *testing.T) {
	t.Helper()
	in.cancel()
	if err := <-in.done; err != nil {
		t.Errorf("decider stopped with %v", err)
	}
}

// play runs one simulated run to its end the way the runner does: a turn,
// then wait for its decision; the last turn fixes the code, runs the check
// and proposes done citing it.
func play(ctx context.Context, b *bus.Bus, s *sim, cd, td events.Digest, turns int, progress *atomic.Int32) (events.StopDecision, error) {
	if err := s.Request(ctx, cd, td); err != nil {
		return events.StopDecision{}, err
	}
	for i := range turns {
		var calls []simCall
		intent := events.Continue()
		switch {
		case i == turns-1:
			calls = []simCall{
				{Tool: "edit_file", Args: "fix", Out: "ok", Applied: true},
				{Tool: "run_command", Args: "./check.sh", Out: "PASS", Check: "tests", Result: "pass"},
				{Tool: "task_complete", Args: "{}", Out: "noted"},
			}
			intent = events.ProposeDone(events.EvidenceRef(fmt.Sprintf("t%d/call-2", s.Turns()+1)))
		case i%3 == 1:
			calls = []simCall{{Tool: "edit_file", Args: fmt.Sprint("try ", i), Out: "ok", Applied: true}, {Tool: "run_command", Args: "./check.sh", Out: "FAIL", Check: "tests", Result: "fail"}}
		case i%3 == 2:
			intent = events.ProposeDone() // a natural finish, with the check failing
		}
		n, err := s.Step(ctx, intent, calls...)
		if err != nil {
			return events.StopDecision{}, err
		}
		var dec events.StopDecision
		if err := await(ctx, b, s.Suite, s.Run, func(l bus.RunLog) bool {
			got := decided(l)[n]
			if len(got) > 0 {
				dec = got[0].Fact.Body.(events.StopDecided).Decision
			}
			return len(got) > 0
		}); err != nil {
			return events.StopDecision{}, err
		}
		progress.Add(1)
		if dec.Result.Type() == "finish" {
			return dec, nil
		}
	}
	return events.StopDecision{}, fmt.Errorf("%s: no finish after %d turns", s.Run, turns)
}

// Kill and restart the decider mid-stream, then run two instances at once:
// every completed turn still has exactly one stop.decided, with the turn's
// decision ID as its message ID and the stall.observed as its cause, and
// each run ends done only on its passing check.
func TestEveryTurnDecidedOnceAcrossRestartAndTwoInstances(t *testing.T) {
	ctx := testCtx(t)
	b, _ := bustest.Start(t)
	fakeStaller(t, b)
	cd, td := publish(t, ctx, b, caseYAML, cases.StallPolicy{})
	const runs, turns = 4, 7

	first := startInstance(b, "A")
	var progress atomic.Int32
	var wg sync.WaitGroup
	finals := make([]events.StopDecision, runs)
	errs := make(chan error, runs)
	for r := range runs {
		wg.Go(func() {
			dec, err := play(ctx, b, newSim(b, "suite", fmt.Sprint("run-", r)), cd, td, turns, &progress)
			if err != nil {
				errs <- err
			}
			finals[r] = dec
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
		if f, ok := finals[r].Result.Variant().(events.StopFinish); !ok || f.Status != events.FinishDone || finals[r].Turn != turns {
			t.Errorf("run-%d ended with %+v at turn %d, want done at turn %d", r, finals[r].Result.Variant(), finals[r].Turn, turns)
		}
		log, err := b.LoadRun(ctx, "suite", fmt.Sprint("run-", r))
		if err != nil {
			t.Fatal(err)
		}
		dec := decided(log)
		stalls := map[uint32]string{}
		completed := 0
		for _, rec := range log.Records {
			switch body := rec.Fact.Body.(type) {
			case events.StallObserved:
				stalls[body.Turn] = rec.Fact.ID.String()
			case events.TurnCompleted:
				completed++
				n := body.Evidence.Turn
				got := dec[n]
				if len(got) != 1 {
					t.Errorf("%s turn %d: %d stop.decided, want exactly 1", log.Run, n, len(got))
					continue
				}
				d := got[0].Fact.Body.(events.StopDecided).Decision
				if !got[0].HasMsgID(decider.MsgID(log.Run, n)) || !got[0].HasMsgID(d.DecisionID) {
					t.Errorf("%s turn %d: msg id %q decision id %q", log.Run, n, got[0].MsgID, d.DecisionID)
				}
				producers[got[0].Fact.Producer.Instance]++
			}
		}
		for n, recs := range dec {
			if recs[0].Fact.Causation != stalls[n] {
				t.Errorf("%s turn %d: decision caused by %q, not the turn's stall.observed %q", log.Run, n, recs[0].Fact.Causation, stalls[n])
			}
		}
		if completed != turns || len(dec) != turns {
			t.Errorf("%s: %d turns completed, %d decided, want %d", log.Run, completed, len(dec), turns)
		}
	}
	if producers["A"] == 0 || producers["B"]+producers["C"] == 0 {
		t.Errorf("decisions by instance: %v; want some before the restart and some after", producers)
	}
	if dead, err := b.DeadLetters(ctx, decider.ConsumerName); err != nil || len(dead) > 0 {
		t.Errorf("dead letters %v (err %v)", dead, err)
	}
}

// A redelivered observation, and the same observation handled by two
// instances at once, commit one stop.decided.
func TestRedeliveryAndTwoInstancesCommitOnce(t *testing.T) {
	ctx := testCtx(t)
	b, _ := bustest.Start(t)
	cd, td := publish(t, ctx, b, caseYAML, cases.StallPolicy{})
	s := newSim(b, "suite", "run-1")
	if err := s.Request(ctx, cd, td); err != nil {
		t.Fatal(err)
	}
	n, err := s.Step(ctx, events.Continue())
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Commit(ctx, "stall", events.OwnerStaller, events.StallObserved{Turn: n, Observation: events.StallObservation{Position: 1}}); err != nil {
		t.Fatal(err)
	}
	log, err := b.LoadRun(ctx, "suite", "run-1")
	if err != nil {
		t.Fatal(err)
	}
	d := bus.Delivery{Record: log.Records[len(log.Records)-1], Deliveries: 1}
	one, two := kittest.Must(decider.New(b, kit.WithInstance("one"))), kittest.Must(decider.New(b, kit.WithInstance("two")))
	var wg sync.WaitGroup
	herrs := make([]error, 2)
	for i, svc := range []*decider.Service{one, two} {
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
	got := decided(log)[n]
	if len(got) != 1 {
		t.Fatalf("%d stop.decided for turn %d, want 1", len(got), n)
	}
	if c, ok := got[0].Fact.Body.(events.StopDecided).Decision.Result.Variant().(events.StopContinue); !ok || !slices.Equal(c.Unmet, []events.RequirementID{"tests"}) {
		t.Errorf("decision %+v", got[0].Fact.Body)
	}
}

// An observation of a turn that never completed cannot be decided by any
// retry: it is dead-lettered at once and no decision is invented.
func TestObservationWithoutTurnIsDeadLettered(t *testing.T) {
	ctx := testCtx(t)
	b, _ := bustest.Start(t)
	cd, td := publish(t, ctx, b, caseYAML, cases.StallPolicy{})
	in := startInstance(b, "A")
	defer in.stop(t)
	s := newSim(b, "suite", "run-1")
	if err := s.Request(ctx, cd, td); err != nil {
		t.Fatal(err)
	}
	if err := s.Commit(ctx, "stall", events.OwnerStaller, events.StallObserved{Turn: 7, Observation: events.StallObservation{Position: 1}}); err != nil {
		t.Fatal(err)
	}
	var dead []bus.DeadLetter
	testutil.Within(t, time.Minute, "the dead letters", func() bool {
		var err error
		if dead, err = b.DeadLetters(ctx, decider.ConsumerName); err != nil {
			t.Fatal(err)
		}
		return !(len(dead) == 0)
	})
	if len(dead) != 1 || !strings.Contains(dead[0].Reason, "turn 7, which has no turn.completed") || dead[0].Deliveries != 1 {
		t.Fatalf("dead letters %+v", dead)
	}
	log, err := b.LoadRun(ctx, "suite", "run-1")
	if err != nil {
		t.Fatal(err)
	}
	if len(decided(log)) != 0 {
		t.Error("a decision was invented")
	}
}

// A judge wired into the shell is asked once per done decision; its
// objection cannot erase the passing check, and its failure leaves the
// decision to the checks.
func TestJudgeThroughShellCannotEraseChecks(t *testing.T) {
	for _, failing := range []bool{false, true} {
		t.Run(fmt.Sprint("failing=", failing), func(t *testing.T) {
			ctx := testCtx(t)
			b, _ := bustest.Start(t)
			fakeStaller(t, b)
			cd, td := publish(t, ctx, b, caseYAML, cases.StallPolicy{})
			var asked atomic.Int32
			judgeCost := uint64(7)
			judge := func(ctx context.Context, req decider.JudgeRequest) (stop.Opinion, error) {
				asked.Add(1)
				if failing {
					return stop.Opinion{}, errors.New("judge unavailable")
				}
				return stop.Opinion{Reviewer: "openai/judge", Verdict: stop.VerdictObject, Reason: "not convinced",
					Usage: &events.Usage{InputTokens: 1500, OutputTokens: 60, Cost: &judgeCost}}, nil
			}
			in := startInstance(b, "A", decider.WithJudge(judge, 10*time.Second))
			defer in.stop(t)
			var progress atomic.Int32
			dec, err := play(ctx, b, newSim(b, "suite", "run-1"), cd, td, 1, &progress)
			if err != nil {
				t.Fatal(err)
			}
			f, ok := dec.Result.Variant().(events.StopFinish)
			if !ok || f.Status != events.FinishDone {
				t.Fatalf("decision %+v", dec.Result.Variant())
			}
			if asked.Load() != 1 {
				t.Errorf("judge asked %d times, want 1", asked.Load())
			}
			if !failing && !strings.Contains(f.Reason, "openai/judge objected") {
				t.Errorf("reason %q does not record the overruled objection", f.Reason)
			}
			// The judge's call is recorded with the decision as the
			// evaluator's spend; a judge that named no model has none.
			log, err := b.LoadRun(ctx, "suite", "run-1")
			if err != nil {
				t.Fatal(err)
			}
			var call *events.JudgeCall
			for _, recs := range decided(log) {
				for _, r := range recs {
					if c := r.Fact.Body.(events.StopDecided).Judge; c != nil {
						call = c
					}
				}
			}
			switch {
			case failing && call != nil:
				t.Errorf("a judge call recorded for a judge that named no model: %+v", call)
			case !failing && (call == nil || call.Model != "openai/judge" || call.Usage == nil || call.Usage.InputTokens != 1500 || *call.Usage.Cost != 7):
				t.Errorf("the judge's call: %+v", call)
			}
		})
	}
}

// The policy lists the declared checks in order, the requirements done
// needs (required checks no requirement names, the write when required)
// and the actor's model.
func TestPolicyFromCase(t *testing.T) {
	c, err := cases.ParseCase("case.yaml", []byte(`
id: c
instruction: do it
requires_write: true
checks:
  - id: build
    command: go build ./...
  - id: tests
    command: go test ./...
  - id: lint
    command: go vet ./...
    required: false
requirements:
  - id: green
    check: tests
  - id: docs
`))
	if err != nil {
		t.Fatal(err)
	}
	tr := &cases.Treatment{ID: "t", Model: cases.ModelSpec{Provider: cases.ProviderOpenAI, Name: "actor"}}
	p := decider.PolicyFrom(cases.Apply(c, tr))
	wantChecks := []stop.Check{{ID: "build", Command: "go build ./..."}, {ID: "tests", Command: "go test ./..."}, {ID: "lint", Command: "go vet ./..."}}
	wantReqs := []stop.Requirement{{ID: "green", Check: "tests"}, {ID: "docs"}, {ID: "build", Check: "build"}, {ID: stop.WriteRequirement, Write: true}}
	if !slices.Equal(p.Checks, wantChecks) || !slices.Equal(p.Requirements, wantReqs) || p.ActorModel != "openai/actor" {
		t.Errorf("policy %+v", p)
	}
}

// No owner appends to a run after its run.ended: a stall.observed the
// decider gets for a run that has ended since is answered with nothing.
func TestNothingDecidedAfterTheRunEnded(t *testing.T) {
	ctx := testCtx(t)
	b, _ := bustest.Start(t)
	cd, td := publish(t, ctx, b, caseYAML, cases.StallPolicy{})
	ended, live := newSim(b, "suite", "ended"), newSim(b, "suite", "live")
	for _, s := range []*sim{ended, live} {
		if err := s.Request(ctx, cd, td); err != nil {
			t.Fatal(err)
		}
		n, err := s.Step(ctx, events.Continue())
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Commit(ctx, "observed", events.OwnerStaller, events.StallObserved{Turn: n, Observation: events.StallObservation{Position: 1}}); err != nil {
			t.Fatal(err)
		}
	}
	if err := ended.Commit(ctx, "ended", events.OwnerRunner, events.RunEnded{Status: events.RunCancelled, Reason: "cancelled"}); err != nil {
		t.Fatal(err)
	}
	in := startInstance(b, "A")
	defer in.stop(t)
	if err := await(ctx, b, "suite", "live", func(l bus.RunLog) bool { return len(decided(l)[1]) > 0 }); err != nil {
		t.Fatal(err)
	}
	bustest.Drained(t, ctx, b, decider.ConsumerName)
	log, err := b.LoadRun(ctx, "suite", "ended")
	if err != nil {
		t.Fatal(err)
	}
	if n := len(decided(log)); n != 0 {
		t.Fatalf("the decider decided %d turns of a run that had ended", n)
	}
}
