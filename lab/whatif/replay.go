package whatif

import (
	"time"

	"github.com/factline/factline/cases"
	"github.com/factline/factline/events"
	"github.com/factline/factline/services/staller/stall"
	"github.com/factline/factline/services/staller/stallpolicy"
)

// Run is one recorded run: the case under its treatment as it ran, and its
// facts in log order.
type Run struct {
	Suite     string
	ID        string
	Effective cases.Effective
	Facts     []events.Fact
}

// Change says how a candidate's decision differs from the recording.
type Change string

const (
	// Same: the candidate stops where the recording stopped, or neither
	// stops within the recorded turns.
	Same Change = "same"
	// Earlier: the candidate stops at a turn where the recording went on
	// (or ended otherwise).
	Earlier Change = "earlier"
	// Later: the recording's stall handler stopped the run at a turn where
	// the candidate would go on. What would have followed was not recorded.
	Later Change = "later"
)

// Recovery is what the recording shows became of the run: its latest
// grade.
type Recovery string

const (
	// Passed: the run's latest verdict passed.
	Passed Recovery = "passed"
	// Failed: the run's latest verdict failed.
	Failed Recovery = "failed"
	// Ungraded: no definitive verdict was recorded.
	Ungraded Recovery = "ungraded"
)

// Saved is what the turns after a candidate's stop cost in the recording.
type Saved struct {
	Turns        uint32        `json:"turns"`
	InputTokens  uint64        `json:"input_tokens"`
	OutputTokens uint64        `json:"output_tokens"`
	Cost         uint64        `json:"cost"`
	CostUnknown  int           `json:"cost_unknown"` // replies without a cost
	Wall         time.Duration `json:"wall_ns"`
}

func (s *Saved) add(o Saved) {
	s.Turns += o.Turns
	s.InputTokens += o.InputTokens
	s.OutputTokens += o.OutputTokens
	s.Cost += o.Cost
	s.CostUnknown += o.CostUnknown
	s.Wall += o.Wall
}

// Outcome is one run re-decided under one candidate.
type Outcome struct {
	Suite     string `json:"suite"`
	Run       string `json:"run"`
	Case      string `json:"case"`
	Treatment string `json:"treatment"`
	// Turns is how many turns the recording completed.
	Turns uint32 `json:"turns"`
	// RecordedStop is the turn the recording's stall handler stopped (or
	// escalated) the run at; 0 when it did not.
	RecordedStop uint32 `json:"recorded_stop,omitempty"`
	// Stop is the turn the candidate stops (or escalates) at; 0 when it
	// does not within the recorded turns.
	Stop   uint32   `json:"stop,omitempty"`
	Cause  string   `json:"cause,omitempty"`
	Change Change   `json:"change"`
	Grade  Recovery `json:"grade"`
	// Scores are the scores of the run's latest grade, when its case
	// declares scorers: what the recording achieved beside its verdict.
	Scores []events.Score `json:"scores,omitempty"`
	// Saved is what the recording spent after the candidate's stop
	// (Earlier only).
	Saved Saved `json:"saved"`
}

// FalseStop reports whether the candidate stopped a run the recording
// shows recovering to a verified pass.
func (o Outcome) FalseStop() bool { return o.Change == Earlier && o.Grade == Passed }

// Replay re-decides a recorded run with over in place of its treatment's
// stall block: the case's own thresholds, overridden field by field by
// over, on top of the defaults, as if the run had been run under a
// treatment with that block. A nil over keeps the thresholds the run was
// recorded under.
func Replay(r Run, over *cases.StallPolicy) Outcome {
	eff := r.Effective
	if over != nil {
		var own cases.StallPolicy
		if eff.Case != nil {
			own = eff.Case.Stall
		}
		eff.Stall = own.Over(*over).Resolve(cases.DefaultStall)
	}
	p := stallpolicy.From(eff)
	o := Outcome{Suite: r.Suite, Run: r.ID}
	o.Grade, o.Scores = gradeOf(r.Facts)
	if c := eff.Case; c != nil {
		o.Case = c.ID
	}
	if t := eff.Treatment; t != nil {
		o.Treatment = t.ID
	}
	s := stall.New(p)
	for _, f := range r.Facts {
		switch b := f.Body.(type) {
		case events.StallObserved:
			if o.RecordedStop == 0 && ends(b.Observation) {
				o.RecordedStop = b.Turn
			}
			// The recording's own observations are not folded: the
			// candidate's decisions stand in for them.
			continue
		case events.TurnCompleted:
			s = stall.Fold(s, f)
			o.Turns = b.Evidence.Turn
			if o.Stop != 0 {
				continue
			}
			obs := stall.Observe(s, b.Evidence.Turn)
			if ends(obs) {
				o.Stop, o.Cause = b.Evidence.Turn, causeOf(obs)
				continue
			}
			if obs.Action != nil {
				// A retry is charged as the staller's committed
				// observation would charge it.
				c := f
				c.Body = events.StallObserved{Turn: b.Evidence.Turn, Observation: obs}
				s = stall.Fold(s, c)
			}
			continue
		}
		if o.Stop == 0 {
			s = stall.Fold(s, f)
		}
	}
	switch {
	case o.Stop != 0 && o.Stop == o.RecordedStop:
		o.Change = Same
	case o.Stop != 0 && (o.RecordedStop == 0 || o.Stop < o.RecordedStop):
		o.Change = Earlier
		o.Saved = savedAfter(r.Facts, o.Stop)
	case o.RecordedStop != 0:
		o.Change = Later
	default:
		o.Change = Same
	}
	return o
}

// ends reports whether an observation takes the run from the agent.
func ends(o events.StallObservation) bool {
	if o.Action == nil {
		return false
	}
	switch o.Action.Variant().(type) {
	case events.StallStop, events.StallEscalate:
		return true
	}
	return false
}

func causeOf(o events.StallObservation) string {
	switch a := o.Action.Variant().(type) {
	case events.StallStop:
		return a.Cause
	case events.StallEscalate:
		return a.Cause
	}
	return ""
}

// gradeOf is the run's latest definitive verdict, and its scores.
func gradeOf(facts []events.Fact) (Recovery, []events.Score) {
	g, rev := Ungraded, uint32(0)
	var scores []events.Score
	for _, f := range facts {
		v, ok := f.Body.(events.GradeVerdict)
		if !ok || v.Verdict.Revision < rev {
			continue
		}
		rev = v.Verdict.Revision
		scores = v.Verdict.Scores
		switch v.Verdict.Result.Variant().(type) {
		case events.VerdictPassed:
			g = Passed
		case events.VerdictFailed:
			g = Failed
		default:
			g = Ungraded
		}
	}
	return g, scores
}

// savedAfter sums what the recording spent after turn stop: the replies
// of later turns and the time from stop's completion to the run's end (or
// its last fact).
func savedAfter(facts []events.Fact, stop uint32) Saved {
	var s Saved
	var from, to time.Time
	for _, f := range facts {
		switch b := f.Body.(type) {
		case events.TurnCompleted:
			if b.Evidence.Turn == stop {
				from = f.At
			}
			if b.Evidence.Turn > stop {
				s.Turns++
			}
		case events.ModelReplied:
			if b.Turn <= stop {
				continue
			}
			if u := b.Usage; u != nil {
				s.InputTokens += u.InputTokens
				s.OutputTokens += u.OutputTokens
				if u.Cost != nil {
					s.Cost += *u.Cost
				} else {
					s.CostUnknown++
				}
			} else {
				s.CostUnknown++
			}
		}
		if _, ok := f.Body.(events.RunEnded); ok {
			to = f.At
			break
		}
		if f.Kind() == events.KindTurnCompleted || f.Kind() == events.KindStopDecided || f.Kind() == events.KindStallObserved {
			to = f.At
		}
	}
	if !from.IsZero() && to.After(from) {
		s.Wall = to.Sub(from)
	}
	return s
}
