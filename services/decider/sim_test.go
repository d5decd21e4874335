package decider_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/factline/factline/bus"
	"github.com/factline/factline/cases"
	"github.com/factline/factline/events"
)

// The runner is not part of this package; these tests write the runner's
// facts themselves, through bus.Commit with the runner's producer role,
// exactly as the runner contract describes them.

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

const caseYAML = `
id: fix-add
instruction: Fix calc.go so that the tests pass.
checks:
  - id: tests
    command: ./check.sh
stall:
  idle_turns: 2
  repair_budget: 0
`

// publish stores the case and a treatment as blobs and returns their
// digests, as the meter does before it requests runs.
func publish(t *testing.T, ctx context.Context, b *bus.Bus, caseText string, treatmentStall cases.StallPolicy) (events.Digest, events.Digest) {
	t.Helper()
	c, err := cases.ParseCase("case.yaml", []byte(caseText))
	if err != nil {
		t.Fatal(err)
	}
	cdata, err := c.Encode()
	if err != nil {
		t.Fatal(err)
	}
	tr := &cases.Treatment{ID: "baseline", Model: cases.ModelSpec{Provider: cases.ProviderOpenAI, Name: "actor-model"}, Stall: treatmentStall}
	tdata, err := tr.Encode()
	if err != nil {
		t.Fatal(err)
	}
	cd, err := b.PutBlob(ctx, cdata)
	if err != nil {
		t.Fatal(err)
	}
	td, err := b.PutBlob(ctx, tdata)
	if err != nil {
		t.Fatal(err)
	}
	return cd, td
}

// sim plays a runner for one run.
type sim struct {
	b          *bus.Bus
	suite, run string
	epoch      uint64
	content    string
	turn       uint32
}

func newSim(b *bus.Bus, suite, run string) *sim {
	return &sim{b: b, suite: suite, run: run, epoch: 1, content: "fixture"}
}

// commit appends one fact under a logical key, once.
func (s *sim) commit(ctx context.Context, key string, owner events.Owner, body events.Body) error {
	id := s.run + "/sim/" + key
	_, err := s.b.Commit(ctx, nil, s.suite, s.run, func(log bus.RunLog) ([]bus.Pending, error) {
		if _, ok := log.ByMsgID(id); ok {
			return nil, nil
		}
		f, err := events.NewFact(events.Meta{
			Suite: s.suite, Run: s.run, TaskGeneration: 1, Position: log.NextPosition(),
			Producer: events.Producer{Service: owner, Instance: "sim"},
		}, body)
		return []bus.Pending{{Fact: f, MsgID: id}}, err
	})
	return err
}

func (s *sim) request(ctx context.Context, cd, td events.Digest) error {
	if err := s.commit(ctx, "requested", events.OwnerMeter, events.RunRequested{
		Case: "fix-add", CaseDigest: cd, Treatment: "baseline", TreatmentDigest: td, Trial: 1,
	}); err != nil {
		return err
	}
	return s.commit(ctx, "claimed", events.OwnerRunner, events.RunClaimed{Runner: "sim", Lease: 1})
}

// simCall is one tool call of a simulated turn.
type simCall struct {
	tool, args, out string
	applied         bool
	check, result   string // result: pass | fail
}

// step writes one whole turn and returns its number.
func (s *sim) step(ctx context.Context, intent events.ActorIntent, calls ...simCall) (uint32, error) {
	s.turn++
	n := s.turn
	k := func(what string) string { return fmt.Sprintf("t%d/%s", n, what) }
	if err := s.commit(ctx, k("started"), events.OwnerRunner, events.TurnStarted{Turn: n, ContextDigest: events.DigestOf([]byte(k("ctx")))}); err != nil {
		return n, err
	}
	tcs := make([]events.ToolCall, len(calls))
	for i, c := range calls {
		tcs[i] = events.ToolCall{ID: events.CallID(fmt.Sprintf("call-%d", i+1)), Name: c.tool, Args: c.args, ArgsDigest: events.DigestOf([]byte(c.args))}
	}
	if err := s.commit(ctx, k("replied"), events.OwnerRunner, events.ModelReplied{Turn: n, Provider: "openai", Model: "actor-model", Calls: tcs}); err != nil {
		return n, err
	}
	var ds []events.CompletedDispatch
	for i, c := range calls {
		id := tcs[i].ID
		if err := s.commit(ctx, k(string(id)+"/intended"), events.OwnerRunner, events.DispatchIntended{
			Turn: n, CallID: id, Tool: c.tool, OperationID: k(string(id)), ArgsDigest: tcs[i].ArgsDigest, Effect: events.EffectWrite,
		}); err != nil {
			return n, err
		}
		mut := events.MutationNotApplicable
		if c.applied {
			mut = events.MutationApplied
			s.epoch++
			s.content = fmt.Sprint("content@", s.epoch)
		}
		v := events.NotVerifier()
		switch c.result {
		case "pass":
			v = events.Passed(s.epoch)
		case "fail":
			v = events.Failed(s.epoch, true, events.Diagnostic{Message: "want 2"})
		}
		d := events.CompletedDispatch{
			CallID: id, EvidenceRef: events.EvidenceRef(fmt.Sprintf("t%d/%s", n, id)), Disposition: events.DispositionExecuted,
			Mutation: mut, Verification: v, Check: c.check, Tool: c.tool, Digest: events.DigestOf([]byte(s.content)),
		}
		if err := s.commit(ctx, k(string(id)+"/completed"), events.OwnerRunner, events.DispatchCompleted{Turn: n, Dispatch: d, Output: c.out}); err != nil {
			return n, err
		}
		ds = append(ds, d)
	}
	return n, s.commit(ctx, k("completed"), events.OwnerRunner, events.TurnCompleted{Evidence: events.RunEvidence{
		RunID: s.run, TaskGeneration: 1, Turn: n, EvidencePosition: 1, ActorIntent: intent, Dispatches: ds,
	}})
}

// await polls the run until find returns true. The deadline only guards
// against a hang; nothing is measured.
func await(ctx context.Context, b *bus.Bus, suite, run string, find func(bus.RunLog) bool) error {
	deadline := time.Now().Add(60 * time.Second)
	for {
		log, err := b.LoadRun(ctx, suite, run)
		if err != nil {
			return err
		}
		if find(log) {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s/%s: timed out waiting", suite, run)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// decided returns the run's stop.decided facts by turn.
func decided(log bus.RunLog) map[uint32][]bus.Record {
	out := map[uint32][]bus.Record{}
	for _, r := range log.Records {
		if sd, ok := r.Fact.Body.(events.StopDecided); ok {
			out[sd.Decision.Turn] = append(out[sd.Decision.Turn], r)
		}
	}
	return out
}

// fakeStaller stands in for the stall handler: it observes every
// turn.completed with no action, once, under the staller's message ID.
func fakeStaller(t *testing.T, b *bus.Bus) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- b.Consume(ctx, bus.ConsumerConfig{Name: "fake-staller", Filters: []string{events.KindFilter(events.KindTurnCompleted)}},
			func(ctx context.Context, d bus.Delivery) error {
				tc := d.Fact.Body.(events.TurnCompleted)
				id := fmt.Sprintf("%s/%d/stall", d.Fact.Run, tc.Evidence.Turn)
				_, err := b.Commit(ctx, nil, d.Fact.Suite, d.Fact.Run, func(log bus.RunLog) ([]bus.Pending, error) {
					if _, ok := log.ByMsgID(id); ok {
						return nil, nil
					}
					f, err := events.NewFact(events.Meta{
						Suite: d.Fact.Suite, Run: d.Fact.Run, TaskGeneration: 1, Position: log.NextPosition(), Causation: d.Fact.ID.String(),
						Producer: events.Producer{Service: events.OwnerStaller, Instance: "fake"},
					}, events.StallObserved{Turn: tc.Evidence.Turn, Observation: events.StallObservation{Position: d.Fact.Position}})
					return []bus.Pending{{Fact: f, MsgID: id}}, err
				})
				return err
			})
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("fake staller: %v", err)
		}
	})
}
