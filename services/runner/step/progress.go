package step

import "github.com/factline/factline/events"

// Progress is where a run stands, read from its facts alone: the last turn
// and how far it got. The runner acts on it, so a runner that takes over a
// run another runner left half-way continues exactly where the log says.
type Progress struct {
	Turn      uint32 // the last turn started (0: none)
	StartedAt int    // index of that turn's turn.started in the facts
	Started   *events.TurnStarted
	Replied   *events.ModelReplied
	Intended  map[events.CallID]events.DispatchIntended
	Completed map[events.CallID]events.DispatchCompleted
	Approvals map[events.CallID]events.Signal // a person's accepted decision on a call of the turn
	TurnGen   uint32                          // the task generation the turn started in
	Done      bool                            // turn.completed is committed
	Decision  *events.StopDecision
	Gen       uint32
	Epoch     uint64 // 1 + applied mutations
	Digest    events.Digest
}

// ReadProgress folds a run's facts into where it stands.
func ReadProgress(facts []events.Fact) Progress {
	p := startProgress()
	for i, f := range facts {
		p.apply(i, f)
	}
	return p
}

// startProgress is the progress of a run with no facts.
func startProgress() Progress { return Progress{Gen: 1, Epoch: 1} }

// apply folds the run's fact at index i into p.
func (p *Progress) apply(i int, f events.Fact) {
	switch b := f.Body.(type) {
	case events.TaskGenerationStarted:
		p.Gen = max(p.Gen, b.Generation)
	case events.TurnStarted:
		*p = Progress{Turn: b.Turn, StartedAt: i, Started: &b, Gen: p.Gen, Epoch: p.Epoch, Digest: p.Digest,
			TurnGen:  max(f.TaskGeneration, p.Gen),
			Intended: map[events.CallID]events.DispatchIntended{}, Completed: map[events.CallID]events.DispatchCompleted{},
			Approvals: map[events.CallID]events.Signal{}}
	case events.ControlAccepted:
		if b.CallID != "" && p.Approvals != nil {
			p.Approvals[b.CallID] = b.Control.Signal
		}
	case events.ModelReplied:
		if b.Turn == p.Turn {
			p.Replied = &b
		}
	case events.DispatchIntended:
		if b.Turn == p.Turn {
			p.Intended[b.CallID] = b
		}
	case events.DispatchCompleted:
		if b.Dispatch.Mutation == events.MutationApplied {
			p.Epoch++
		}
		if b.Dispatch.Digest != "" {
			p.Digest = b.Dispatch.Digest
		}
		if b.Turn == p.Turn {
			p.Completed[b.Dispatch.CallID] = b
		}
	case events.TurnCompleted:
		if b.Evidence.Turn == p.Turn {
			p.Done = true
		}
	case events.StopDecided:
		if b.Decision.Turn == p.Turn {
			p.Decision = &b.Decision
		}
	}
}

// Action is the next step of a run, as its progress says.
type Action int

// The steps of a run's loop.
const (
	// StartTurn: no turn yet, or the stop decider continued the last one.
	StartTurn Action = iota + 1
	// AskModel: the turn is started and has no reply yet; the request is
	// rebuilt from the facts before turn.started.
	AskModel
	// FinishTurn: the reply is in; its calls are settled and the turn
	// completed.
	FinishTurn
	// AwaitDecision: the turn is completed; the stop decider decides it.
	AwaitDecision
	// End: the stop decider finished the run.
	End
)

// Next says what the run does next, and with End how it ends.
func (p Progress) Next() (Action, Ending) {
	switch {
	case p.Turn == 0 || p.Decision != nil:
		if p.Decision != nil {
			if fin, ok := p.Decision.Result.Variant().(events.StopFinish); ok {
				return End, Finished(fin)
			}
		}
		return StartTurn, Ending{}
	case p.Replied == nil:
		return AskModel, Ending{}
	case !p.Done:
		return FinishTurn, Ending{}
	}
	return AwaitDecision, Ending{}
}
