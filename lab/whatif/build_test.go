package whatif_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/factline/factline/cases"
	"github.com/factline/factline/events"
	"github.com/factline/factline/lab/whatif"
	"github.com/factline/factline/services/staller/stall"
	"github.com/factline/factline/services/staller/stallpolicy"
)

// recording builds a run's facts as the services write them: each turn a
// status poll answered by the next of outs, and the staller's observation
// decided under the run's own policy, as it was committed.
type recording struct {
	t     *testing.T
	run   whatif.Run
	state stall.State
	pos   uint64
	at    time.Time
}

func record(t *testing.T, id string, limits cases.StallLimits) *recording {
	eff := cases.Effective{Case: &cases.Case{ID: "poll"}, Treatment: &cases.Treatment{ID: "t"}, Stall: limits}
	r := &recording{t: t, run: whatif.Run{Suite: "s", ID: id, Effective: eff},
		state: stall.New(stallpolicy.From(eff)), at: time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)}
	r.add(events.OwnerRunner, events.RunClaimed{Runner: "test", Lease: 1})
	return r
}

func (r *recording) add(owner events.Owner, b events.Body) {
	r.t.Helper()
	r.pos++
	r.at = r.at.Add(time.Second)
	f, err := events.NewFact(events.Meta{Suite: "s", Run: r.run.ID, TaskGeneration: 1, Position: r.pos,
		Producer: events.Producer{Service: owner, Instance: "test"}}, b)
	if err != nil {
		r.t.Fatalf("fact %s: %v", b.Kind(), err)
	}
	f.At = r.at
	r.run.Facts = append(r.run.Facts, f)
	r.state = stall.Fold(r.state, f)
}

// polls plays one turn per output; the recording's staller may stop the
// run, and then no later turn is played. It returns the turns played.
func (r *recording) polls(outs ...string) uint32 {
	r.t.Helper()
	cost := uint64(3)
	for i, out := range outs {
		n := uint32(i + 1)
		r.add(events.OwnerRunner, events.TurnStarted{Turn: n, ContextDigest: events.DigestOf(fmt.Append(nil, "ctx", n))})
		call := events.ToolCall{ID: "call-1", Name: "run_command", Args: "job status", ArgsDigest: events.DigestOf([]byte("job status"))}
		r.add(events.OwnerRunner, events.ModelReplied{Turn: n, Provider: "scripted", Calls: []events.ToolCall{call},
			Usage: &events.Usage{InputTokens: 100, OutputTokens: 10, Cost: &cost}})
		r.add(events.OwnerRunner, events.DispatchIntended{Turn: n, CallID: call.ID, Tool: call.Name, OperationID: fmt.Sprintf("op-%d", n),
			ArgsDigest: call.ArgsDigest, Effect: events.EffectRead})
		d := events.CompletedDispatch{CallID: call.ID, EvidenceRef: events.EvidenceRef(fmt.Sprintf("t%d/call-1", n)),
			Disposition: events.DispositionExecuted, Mutation: events.MutationNotApplicable, Verification: events.NotVerifier(), Tool: call.Name}
		r.add(events.OwnerRunner, events.DispatchCompleted{Turn: n, Dispatch: d, Output: out})
		r.add(events.OwnerRunner, events.TurnCompleted{Evidence: events.RunEvidence{RunID: r.run.ID, TaskGeneration: 1, Turn: n,
			EvidencePosition: r.pos + 1, ActorIntent: events.Continue(), Dispatches: []events.CompletedDispatch{d}}})
		o := stall.Observe(r.state, n)
		r.add(events.OwnerStaller, events.StallObserved{Turn: n, Observation: o})
		if o.Action != nil && o.Action.Type() != "retry" {
			return n
		}
	}
	return uint32(len(outs))
}

// end closes the run and records its grade, with the given scores.
func (r *recording) end(status events.RunStatus, grade events.VerdictResult, scores ...events.Score) whatif.Run {
	r.add(events.OwnerRunner, events.RunEnded{Status: status, Reason: "test", LastEvidence: []events.EvidenceRef{}})
	r.add(events.OwnerGrader, events.GradeVerdict{Verdict: events.GraderVerdict{AttemptID: r.run.ID, SnapshotID: events.DigestOf([]byte("snap")),
		Revision: 1, Instruments: []events.InstrumentResult{}, Vetoes: []events.GradeVeto{}, Result: grade, Scores: scores}})
	return r.run
}

// off is a policy with the stall handler off: the ground truth for
// recovery.
var off = cases.StallLimits{}

func intp(v int) *int { return &v }
