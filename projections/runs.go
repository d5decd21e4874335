package projections

import (
	"time"

	"github.com/factline/factline/events"
)

// RunSummary is the handoff packet of one run as the log shows it.
type RunSummary struct {
	Suite      string           `json:"suite"`
	Run        string           `json:"run"`
	Case       string           `json:"case,omitempty"`
	Treatment  string           `json:"treatment,omitempty"`
	Trial      uint32           `json:"trial,omitempty"`
	Runner     string           `json:"runner,omitempty"`
	Lease      uint32           `json:"lease,omitempty"`
	Generation uint32           `json:"task_generation"`
	Turns      uint32           `json:"turns"`
	Facts      int              `json:"facts"`
	LastKind   events.Kind      `json:"last_kind"`
	LastAt     time.Time        `json:"last_at"`
	Status     events.RunStatus `json:"status,omitempty"` // empty while running
	Reason     string           `json:"reason,omitempty"`
	Spent      *events.Spent    `json:"spent,omitempty"`
	Evidence   []string         `json:"last_evidence,omitempty"`
	NextAction string           `json:"next_action,omitempty"`
	Sealed     events.Digest    `json:"snapshot,omitempty"`
}

// Runs is the state of the runs projection, keyed by suite/run.
type Runs map[string]*RunSummary

// RunsFold shows every run's status, reason, spend, last evidence and next
// action: the handoff packet, rebuilt from the log.
var RunsFold = Fold[Runs]{
	Key:   "runs",
	Help:  "status, reason, spend, last evidence and next action of every run",
	Init:  func() Runs { return Runs{} },
	Apply: applyRun,
	View:  func(s Runs) any { return sortedValues(s) },
}

func applyRun(s Runs, f events.Fact) Runs {
	if f.Run == events.SuiteScope {
		return s
	}
	key := f.Suite + "/" + f.Run
	r := s[key]
	if r == nil {
		r = &RunSummary{Suite: f.Suite, Run: f.Run}
		s[key] = r
	}
	r.Facts++
	r.LastKind, r.LastAt = f.Kind(), f.At
	r.Generation = max(r.Generation, f.TaskGeneration)
	switch b := f.Body.(type) {
	case events.RunRequested:
		r.Case, r.Treatment, r.Trial = b.Case, b.Treatment, b.Trial
	case events.RunClaimed:
		r.Runner, r.Lease = b.Runner, b.Lease
	case events.TurnCompleted:
		r.Turns = max(r.Turns, b.Evidence.Turn)
	case events.RunEnded:
		spent := b.Spent
		r.Status, r.Reason, r.Spent, r.NextAction = b.Status, b.Reason, &spent, b.NextAction
		r.Evidence = make([]string, len(b.LastEvidence))
		for i, e := range b.LastEvidence {
			r.Evidence[i] = string(e)
		}
	case events.CandidateSealed:
		r.Sealed = b.SnapshotDigest
	}
	return s
}

// KindCounts is the state of the kinds projection.
type KindCounts map[events.Kind]int

// KindsFold counts facts by kind: the smallest useful projection, and a
// template for analysts.
var KindsFold = Fold[KindCounts]{
	Key:   "kinds",
	Help:  "how many facts of each kind the log holds",
	Init:  func() KindCounts { return KindCounts{} },
	Apply: func(s KindCounts, f events.Fact) KindCounts { s[f.Kind()]++; return s },
}

func init() {
	Register(RunsFold)
	Register(KindsFold)
}
