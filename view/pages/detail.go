package pages

import (
	"time"

	"github.com/factline/factline/events"
	"github.com/factline/factline/ops"
)

// runDetail is what a run's transcript shows beyond the history
// projection (which holds each turn's request digest, reply, calls and
// their observations, feedback and steers): dispositions and
// verifications, the stall handler's observations, the stop decisions,
// accepted controls, the end and the sealed candidate.
type runDetail struct {
	requested *events.RunRequested
	// parent is set on a child run: the run and call that delegated it.
	parent *events.ParentRef
	claims []Claim
	turns  map[uint32]*turnDetail
	// current is the newest turn started: a control accepted now belongs
	// to it (0: before the first turn).
	current  uint32
	preamble []Control
	ended    *events.RunEnded
	endedAt  time.Time
	sealed   *events.CandidateSealed
	log      []FactLine
}

type turnDetail struct {
	started   *events.TurnStarted
	at        time.Time
	replied   *events.ModelReplied
	intended  map[events.CallID]events.DispatchIntended
	completed map[events.CallID]events.DispatchCompleted
	evidence  *events.RunEvidence
	stall     *events.StallObservation
	stops     []events.StopDecision
	controls  []Control
}

func newRunDetail() *runDetail { return &runDetail{turns: map[uint32]*turnDetail{}} }

func (d *runDetail) turn(n uint32) *turnDetail {
	t := d.turns[n]
	if t == nil {
		t = &turnDetail{intended: map[events.CallID]events.DispatchIntended{}, completed: map[events.CallID]events.DispatchCompleted{}}
		d.turns[n] = t
	}
	return t
}

// apply folds one fact of the run.
func (d *runDetail) apply(seq uint64, f events.Fact) {
	d.log = append(d.log, FactLine{Seq: seq, At: f.At, Kind: string(f.Kind()), Generation: f.TaskGeneration, Summary: ops.Summary(f)})
	switch b := f.Body.(type) {
	case events.RunRequested:
		if d.requested == nil {
			d.requested = &b
		}
	case events.RunDelegated:
		if d.requested == nil {
			r, p := b.Request, b.Parent
			d.requested, d.parent = &r, &p
		}
	case events.RunClaimed:
		d.claims = append(d.claims, Claim{At: f.At, Runner: b.Runner, Lease: b.Lease, ResumeFrom: b.ResumeFrom})
	case events.TurnStarted:
		t := d.turn(b.Turn)
		t.started, t.at = &b, f.At
		d.current = max(d.current, b.Turn)
	case events.ModelReplied:
		d.turn(b.Turn).replied = &b
	case events.DispatchIntended:
		d.turn(b.Turn).intended[b.CallID] = b
	case events.DispatchCompleted:
		d.turn(b.Turn).completed[b.Dispatch.CallID] = b
	case events.TurnCompleted:
		e := b.Evidence
		d.turn(e.Turn).evidence = &e
	case events.StallObserved:
		o := b.Observation
		d.turn(b.Turn).stall = &o
	case events.StopDecided:
		t := d.turn(b.Decision.Turn)
		t.stops = append(t.stops, b.Decision)
	case events.ControlAccepted:
		d.addControl(controlOf(f.At, b))
	case events.TaskGenerationStarted:
		d.addControl(Control{At: f.At, ID: b.Control, Signal: "task.generation", Instruction: b.Instruction, Generation: b.Generation})
	case events.RunEnded:
		if d.ended == nil { // a run ends once; a second end never rewrites the first
			d.ended, d.endedAt = &b, f.At
		}
	case events.CandidateSealed:
		d.sealed = &b
	}
}

func (d *runDetail) addControl(c Control) {
	if d.current == 0 {
		d.preamble = append(d.preamble, c)
		return
	}
	t := d.turn(d.current)
	t.controls = append(t.controls, c)
}

func controlOf(at time.Time, b events.ControlAccepted) Control {
	return Control{At: at, ID: b.Control.ID, Signal: string(b.Control.Signal), Instruction: b.Instruction,
		CallID: string(b.CallID), ArgsDigest: b.ArgsDigest, Reason: b.Reason, Operation: b.Operation, Outcome: b.Outcome}
}
