package fleettest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/factline/factline/bus"
	"github.com/factline/factline/cases"
	"github.com/factline/factline/events"
	"github.com/factline/factline/internal/sleep"
)

// PublishYAML stores the case and a treatment as blobs and returns their
// digests, as the meter does before it requests runs.
func PublishYAML(t testing.TB, ctx context.Context, b *bus.Bus, caseText string, treatmentStall cases.StallPolicy) (events.Digest, events.Digest) {
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
	cd, err := b.Blobs().Put(ctx, cdata)
	if err != nil {
		t.Fatal(err)
	}
	td, err := b.Blobs().Put(ctx, tdata)
	if err != nil {
		t.Fatal(err)
	}
	return cd, td
}

// Sim plays a runner for one run: it writes the runner's facts itself,
// through bus.Commit with the runner's producer role, as the runner
// contract describes them, for tests of the services downstream.
type Sim struct {
	b          *bus.Bus
	Suite, Run string
	epoch      uint64
	content    string
	turn       uint32
}

// Turns is how many turns the simulation wrote.
func (s *Sim) Turns() uint32 { return s.turn }

// NewSim returns a simulated runner for one run.
func NewSim(b *bus.Bus, suite, run string) *Sim {
	return &Sim{b: b, Suite: suite, Run: run, epoch: 1, content: "fixture"}
}

// Commit appends one fact of the run as owner under a logical key, once.
func (s *Sim) Commit(ctx context.Context, key string, owner events.Owner, body events.Body) error {
	id := s.Run + "/sim/" + key
	_, err := s.b.Commit(ctx, nil, s.Suite, s.Run, func(log bus.RunLog) ([]bus.Pending, error) {
		if _, ok := log.ByMsgID(id); ok {
			return nil, nil
		}
		f, err := events.NewFact(events.Meta{
			Suite: s.Suite, Run: s.Run, TaskGeneration: 1, Position: log.NextPosition(),
			Producer: events.Producer{Service: owner, Instance: "sim"},
		}, body)
		return []bus.Pending{{Fact: f, MsgID: id}}, err
	})
	return err
}

// Request commits run.requested and run.claimed.
func (s *Sim) Request(ctx context.Context, cd, td events.Digest) error {
	if err := s.Commit(ctx, "requested", events.OwnerMeter, events.RunRequested{
		Case: "fix-add", CaseDigest: cd, Treatment: "baseline", TreatmentDigest: td, Trial: 1,
	}); err != nil {
		return err
	}
	return s.Commit(ctx, "claimed", events.OwnerRunner, events.RunClaimed{Runner: "sim", Lease: 1})
}

// SimCall is one tool call of a simulated turn.
type SimCall struct {
	Tool, Args, Out string
	Applied         bool
	Check, Result   string // Result: pass | fail
}

// Step writes one whole turn and returns its number.
func (s *Sim) Step(ctx context.Context, intent events.ActorIntent, calls ...SimCall) (uint32, error) {
	s.turn++
	n := s.turn
	k := func(what string) string { return fmt.Sprintf("t%d/%s", n, what) }
	if err := s.Commit(ctx, k("started"), events.OwnerRunner, events.TurnStarted{Turn: n, ContextDigest: events.DigestOf([]byte(k("ctx")))}); err != nil {
		return n, err
	}
	tcs := make([]events.ToolCall, len(calls))
	for i, c := range calls {
		tcs[i] = events.ToolCall{ID: events.CallID(fmt.Sprintf("call-%d", i+1)), Name: c.Tool, Args: c.Args, ArgsDigest: events.DigestOf([]byte(c.Args))}
	}
	if err := s.Commit(ctx, k("replied"), events.OwnerRunner, events.ModelReplied{Turn: n, Provider: "openai", Model: "actor-model", Calls: tcs}); err != nil {
		return n, err
	}
	var ds []events.CompletedDispatch
	for i, c := range calls {
		id := tcs[i].ID
		if err := s.Commit(ctx, k(string(id)+"/intended"), events.OwnerRunner, events.DispatchIntended{
			Turn: n, CallID: id, Tool: c.Tool, OperationID: k(string(id)), ArgsDigest: tcs[i].ArgsDigest, Effect: events.EffectWrite,
		}); err != nil {
			return n, err
		}
		mut := events.MutationNotApplicable
		if c.Applied {
			mut = events.MutationApplied
			s.epoch++
			s.content = fmt.Sprint("content@", s.epoch)
		}
		v := events.NotVerifier()
		switch c.Result {
		case "pass":
			v = events.Passed(s.epoch)
		case "fail":
			v = events.Failed(s.epoch, true, events.Diagnostic{Message: "want 2"})
		}
		d := events.CompletedDispatch{
			CallID: id, EvidenceRef: events.EvidenceRef(fmt.Sprintf("t%d/%s", n, id)), Disposition: events.DispositionExecuted,
			Mutation: mut, Verification: v, Check: c.Check, Tool: c.Tool, Digest: events.DigestOf([]byte(s.content)),
		}
		if err := s.Commit(ctx, k(string(id)+"/completed"), events.OwnerRunner, events.DispatchCompleted{Turn: n, Dispatch: d, Output: c.Out}); err != nil {
			return n, err
		}
		ds = append(ds, d)
	}
	return n, s.Commit(ctx, k("completed"), events.OwnerRunner, events.TurnCompleted{Evidence: events.RunEvidence{
		RunID: s.Run, TaskGeneration: 1, Turn: n, EvidencePosition: 1, ActorIntent: intent, Dispatches: ds,
	}})
}

// Await polls the run until find returns true. The deadline only guards
// against a hang; nothing is measured. It is ctx's where ctx has one (a
// test that gives a long suite minutes means minutes on a busy machine),
// else a minute.
func Await(ctx context.Context, b *bus.Bus, suite, run string, find func(bus.RunLog) bool) error {
	deadline, ok := ctx.Deadline()
	if !ok {
		deadline = time.Now().Add(60 * time.Second)
	}
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
		if err := sleep.For(ctx, 5*time.Millisecond); err != nil {
			return err
		}
	}
}

// SimCaseYAML is a small case with one required check, a two-turn idle
// limit and no repair budget: what the downstream services' tests run
// their simulated runs under.
const SimCaseYAML = `
id: fix-add
instruction: Fix calc.go so that the tests pass.
checks:
  - id: tests
    command: ./check.sh
stall:
  idle_turns: 2
  repair_budget: 0
`

// Ctx returns a context that ends with the test, bounded so that a hang
// fails instead of waiting forever.
func Ctx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}
