package pages_test

import (
	"errors"
	"slices"
	"testing"

	"github.com/factline/factline/events"
	"github.com/factline/factline/view/pages"
)

// scenario feeds a model facts of one run, one stream sequence each.
type scenario struct {
	t   *testing.T
	m   *pages.Model
	seq uint64
	pos map[string]uint64
}

func newScenario(t *testing.T) *scenario {
	return &scenario{t: t, m: pages.New(), pos: map[string]uint64{}}
}

var digest = events.DigestOf([]byte("x"))

// add makes a valid fact of suite/run (SuiteScope for a suite's) and folds
// it at the next sequence.
func (s *scenario) add(suite, run string, gen uint32, owner events.Owner, body events.Body) uint64 {
	s.t.Helper()
	s.pos[suite+"/"+run]++
	if run == events.SuiteScope {
		gen = 0
	}
	f, err := events.NewFact(events.Meta{Suite: suite, Run: run, TaskGeneration: gen, Position: s.pos[suite+"/"+run],
		Producer: events.Producer{Service: owner, Instance: "test"}}, body)
	if err != nil {
		s.t.Fatal(err)
	}
	s.seq++
	s.m.Apply(s.seq, f)
	return s.seq
}

// A run waiting for a person's approval shows the operation and the exact
// arguments' digest; controls and steers land where they were accepted;
// the stall stop and the stop decision it led to show their cause and
// unmet requirements; facts folded again after a reconnect count once.
func TestARunPageShowsWhatItsFactsSay(t *testing.T) {
	s := newScenario(t)
	const suite, run = "s", "r"
	s.add(suite, run, 1, events.OwnerMeter, events.RunRequested{Case: "c", CaseDigest: digest, Treatment: "t", TreatmentDigest: digest, Trial: 1,
		Budget: events.Budget{Steps: 5}})
	s.add(suite, run, 1, events.OwnerRunner, events.RunClaimed{Runner: "r1", Lease: 1})
	s.add(suite, run, 1, events.OwnerRunner, events.ControlAccepted{Control: events.ControlRef{ID: "early", Signal: events.SignalSteer}, Instruction: "before anything"})
	s.add(suite, run, 1, events.OwnerRunner, events.TurnStarted{Turn: 1, ContextDigest: digest, Messages: 2})
	s.add(suite, run, 1, events.OwnerRunner, events.ModelReplied{Turn: 1, Provider: "scripted", Text: "calling",
		Calls: []events.ToolCall{{ID: "c1", Name: "http_call", Args: `{"url":"http://127.0.0.1/x"}`, ArgsDigest: digest}}})
	s.add(suite, run, 1, events.OwnerRunner, events.DispatchIntended{Turn: 1, CallID: "c1", Tool: "http_call", OperationID: "op-1", ArgsDigest: digest, Effect: events.EffectExternal})

	p, ok := s.m.Run(suite, run)
	if !ok {
		t.Fatal("no page for the run")
	}
	if len(p.Waiting) != 1 || p.Waiting[0].Operation != "op-1" || p.Waiting[0].ArgsDigest != digest || p.End != nil {
		t.Fatalf("waiting: %+v, end %v", p.Waiting, p.End)
	}
	if len(p.Preamble) != 1 || p.Preamble[0].Instruction != "before anything" {
		t.Fatalf("the control before turn 1: %+v", p.Preamble)
	}
	if c := p.Turns[0].Calls[0]; !c.Intended || c.Settled || c.Operation != "op-1" || c.Args == "" {
		t.Fatalf("the call: %+v", c)
	}

	s.add(suite, run, 1, events.OwnerRunner, events.ControlAccepted{Control: events.ControlRef{ID: "ok", Signal: events.SignalApprove}, CallID: "c1", ArgsDigest: digest})
	s.add(suite, run, 1, events.OwnerRunner, events.DispatchCompleted{Turn: 1, Output: "200 OK", Dispatch: events.CompletedDispatch{CallID: "c1", EvidenceRef: "t1/c1",
		Disposition: events.DispositionExecuted, Mutation: events.MutationNotApplicable, Verification: events.Failed(3, true, events.Diagnostic{Message: "want 2", File: "a.go", Line: 4}), Outcome: events.OutcomeApplied}})
	s.add(suite, run, 1, events.OwnerRunner, events.TurnCompleted{Evidence: events.RunEvidence{RunID: run, TaskGeneration: 1, Turn: 1, EvidencePosition: 8,
		ActorIntent: events.ProposeDone("t1/c1")}})
	s.add(suite, run, 1, events.OwnerStaller, events.StallObserved{Turn: 1, Observation: events.StallObservation{Position: 9,
		Action: ptr(events.StopStall(events.StallStop{Cause: "repeated_failure", Unmet: []events.RequirementID{"tests"}, Evidence: []events.EvidenceRef{"t1/c1"}}))}})
	last := s.add(suite, run, 1, events.OwnerDecider, events.StopDecided{Decision: events.StopDecision{DecisionID: "d1", Turn: 1, TaskGeneration: 1,
		Result: events.Finish(events.StopFinish{Status: events.FinishIncomplete, Unmet: []events.RequirementID{"tests"}, Reason: "stall: repeated_failure"})}})

	p, _ = s.m.Run(suite, run)
	tr := p.Turns[0]
	if len(p.Waiting) != 0 {
		t.Fatalf("a settled call still waits: %+v", p.Waiting)
	}
	if c := tr.Calls[0]; c.Disposition != "executed" || c.Verification != "failed" || len(c.Diagnostics) != 1 || c.Output != "200 OK" || c.Outcome != "applied" {
		t.Fatalf("the settled call: %+v", c)
	}
	if len(tr.Controls) != 1 || tr.Controls[0].Signal != "approve" || tr.Controls[0].ArgsDigest != digest {
		t.Fatalf("the approval: %+v", tr.Controls)
	}
	if tr.Stall == nil || tr.Stall.Action != "stop" || tr.Stall.Cause != "repeated_failure" || !slices.Equal(tr.Stall.Unmet, []string{"tests"}) {
		t.Fatalf("the stall: %+v", tr.Stall)
	}
	if len(tr.Stops) != 1 || tr.Stops[0].Status != "incomplete" || !slices.Equal(tr.Stops[0].Unmet, []string{"tests"}) {
		t.Fatalf("the stop: %+v", tr.Stops)
	}
	if tr.Intent == nil || tr.Intent.Type != "propose_done" {
		t.Fatalf("the intent: %+v", tr.Intent)
	}

	// A feed that reads again from an earlier sequence folds nothing twice.
	f, _ := events.NewFact(events.Meta{Suite: suite, Run: run, TaskGeneration: 1, Position: 99, Producer: events.Producer{Service: events.OwnerRunner, Instance: "x"}},
		events.RunClaimed{Runner: "again", Lease: 9})
	s.m.Apply(last, f)
	if q, _ := s.m.Run(suite, run); len(q.Log) != len(p.Log) || q.Handoff.Runner != "r1" {
		t.Fatalf("a fact at an old sequence was folded: %d facts, runner %s", len(q.Log), q.Handoff.Runner)
	}
	if _, ok := s.m.Run(suite, "other"); ok {
		t.Fatal("a page for a run the log does not hold")
	}
}

// The suites page lists a submitted suite with the report's progress, and
// a suite whose runs came without a submission with its runs only; a
// message that holds no fact is listed apart.
func TestTheSuitesPageCountsWhatTheReportCounts(t *testing.T) {
	s := newScenario(t)
	s.add("sub", events.SuiteScope, 0, events.OwnerSubmitter, events.SuiteSubmitted{Name: "sub", SpecDigest: digest,
		Cases: []events.Ref{{ID: "a", Digest: digest}, {ID: "b", Digest: digest}}, Treatments: []events.Ref{{ID: "t", Digest: digest}}, Trials: 1})
	s.add("sub", "a-t-t1", 1, events.OwnerMeter, events.RunRequested{Case: "a", CaseDigest: digest, Treatment: "t", TreatmentDigest: digest, Trial: 1})
	s.add("sub", "a-t-t1", 1, events.OwnerRunner, events.RunClaimed{Runner: "r", Lease: 1})
	s.add("loose", "x", 1, events.OwnerRunner, events.RunClaimed{Runner: "r", Lease: 1})
	s.seq++
	s.m.Skip(s.seq, "fact.sub.a-t-t1.run.ended", errors.New("bad msgpack"))

	p := s.m.Suites()
	if len(p.Suites) != 2 || p.Suites[0].Suite != "loose" || p.Suites[1].Suite != "sub" {
		t.Fatalf("suites: %+v", p.Suites)
	}
	loose, sub := p.Suites[0], p.Suites[1]
	if loose.Submitted || loose.Runs != 1 || loose.Running != 1 {
		t.Fatalf("the loose suite: %+v", loose)
	}
	if !sub.Submitted || sub.Planned != 2 || sub.Started != 1 || sub.Ended != 0 || sub.Awaiting != 2 || sub.Complete || sub.Running != 1 {
		t.Fatalf("the submitted suite: %+v", sub)
	}
	if len(sub.Outcomes) != 1 || sub.Outcomes[0] != (pages.Count{Outcome: "awaiting", N: 2}) {
		t.Fatalf("outcomes: %+v", sub.Outcomes)
	}
	if len(p.Bad) != 1 || p.Through != s.seq {
		t.Fatalf("bad %+v, through %d", p.Bad, p.Through)
	}
	if sub.StoppedEarly {
		t.Fatal("stopped early before any suite.stopped")
	}
	s.add("sub", events.SuiteScope, 0, events.OwnerMeter, events.SuiteStopped{Comparison: "t vs u", Reason: "difference", Pairs: 1, Confidence: 950})
	if row := s.m.Suites().Suites[1]; !row.StoppedEarly {
		t.Fatalf("a suite.stopped does not show: %+v", row)
	}
	if row := s.m.Suites().Suites[1]; row.Controlled != "" {
		t.Fatalf("a suite never controlled shows a control: %+v", row)
	}
	s.add("sub", events.SuiteScope, 0, events.OwnerSubmitter, events.SuiteControlled{ID: "c", Action: events.SuitePause, From: "ops"})
	if row := s.m.Suites().Suites[1]; row.Controlled != "paused" {
		t.Fatalf("a suite.controlled does not show: %+v", row)
	}
	sp, ok := s.m.Suite("sub")
	if !ok || len(sp.Grid) != 2 || len(sp.Grid[0].Cells) != 1 || sp.Grid[0].Cells[0].Trials[0].Run != "a-t-t1" || len(sp.Runs) != 1 {
		t.Fatalf("the suite page: %+v", sp)
	}
	if _, ok := s.m.Suite("nosuch"); ok {
		t.Fatal("a page for a suite the log does not hold")
	}
}

func ptr[T any](v T) *T { return &v }

// A reply the response cache served is marked on the run's page with
// where it came from; a reply of the model is not.
func TestARunPageMarksACachedReply(t *testing.T) {
	s := newScenario(t)
	const suite, run = "s", "r"
	s.add(suite, run, 1, events.OwnerMeter, events.RunRequested{Case: "c", CaseDigest: digest, Treatment: "t", TreatmentDigest: digest, Trial: 1})
	s.add(suite, run, 1, events.OwnerRunner, events.RunClaimed{Runner: "r1", Lease: 1})
	for turn := uint32(1); turn <= 2; turn++ {
		s.add(suite, run, 1, events.OwnerRunner, events.TurnStarted{Turn: turn, ContextDigest: digest, Messages: 2})
		reply := events.ModelReplied{Turn: turn, Provider: "openai", Text: "ok", Usage: &events.Usage{InputTokens: 10, OutputTokens: 2, Cost: ptr(uint64(0))}}
		if turn == 2 {
			reply.Cached = &events.CachedReply{Entry: digest, Suite: "s0", Run: "r0", Turn: 2, Cost: ptr(uint64(5))}
		}
		s.add(suite, run, 1, events.OwnerRunner, reply)
		s.add(suite, run, 1, events.OwnerRunner, events.TurnCompleted{Evidence: events.RunEvidence{RunID: run, TaskGeneration: 1, Turn: turn,
			EvidencePosition: 1, ActorIntent: events.Continue()}})
	}
	p, ok := s.m.Run(suite, run)
	if !ok || len(p.Turns) != 2 {
		t.Fatalf("page %v: %+v", ok, p.Turns)
	}
	if p.Turns[0].Cached != nil {
		t.Fatalf("the model's reply is marked cached: %+v", p.Turns[0].Cached)
	}
	if c := p.Turns[1].Cached; c == nil || c.Run != "r0" || c.Turn != 2 || *c.Cost != 5 {
		t.Fatalf("the cached reply: %+v", c)
	}
}
