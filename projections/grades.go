package projections

import (
	"slices"

	"github.com/factline/factline/events"
)

// GradeRecord is one run's grading as the log shows it: every instrument
// result, every verdict revision, every conflict. Nothing is rewritten: a
// later revision is added after the earlier ones.
type GradeRecord struct {
	Suite       string                    `json:"suite"`
	Run         string                    `json:"run"`
	Snapshot    events.Digest             `json:"snapshot,omitempty"`
	Instruments []events.InstrumentResult `json:"instruments,omitempty"`
	Revisions   []GradeRevision           `json:"revisions,omitempty"`
	Conflicts   []events.GradeConflict    `json:"conflicts,omitempty"`
}

// GradeRevision is one verdict.
type GradeRevision struct {
	Revision uint32             `json:"revision"`
	Result   string             `json:"result"`
	Detail   any                `json:"detail,omitempty"`
	Vetoes   []events.GradeVeto `json:"vetoes,omitempty"`
	// Scores are the verdict's scores, when its case declares scorers.
	Scores []events.Score `json:"scores,omitempty"`
}

// Grades is the state of the grades projection, keyed by suite/run.
type Grades map[string]*GradeRecord

// GradesFold shows each run's grade records with their revisions and
// conflicts.
var GradesFold = Fold[Grades]{
	Key:  "grades",
	Help: "every run's instrument results, verdict revisions and conflicts",
	Init: func() Grades { return Grades{} },
	Apply: func(s Grades, f events.Fact) Grades {
		rec := func() *GradeRecord {
			key := f.Suite + "/" + f.Run
			if s[key] == nil {
				s[key] = &GradeRecord{Suite: f.Suite, Run: f.Run}
			}
			return s[key]
		}
		switch b := f.Body.(type) {
		case events.CandidateSealed:
			rec().Snapshot = b.SnapshotDigest
		case events.GradeInstrument:
			rec().Instruments = append(rec().Instruments, b.Result)
		case events.GradeVerdict:
			v := b.Verdict
			rec().Revisions = append(rec().Revisions, GradeRevision{Revision: v.Revision, Result: v.Result.Type(), Detail: v.Result.Variant(), Vetoes: v.Vetoes,
				Scores: v.Scores})
		case events.GradeConflict:
			rec().Conflicts = append(rec().Conflicts, b)
		}
		return s
	},
	View: func(s Grades) any { return sortedValues(s) },
}

// sortedKeys lists a map's keys in order.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// sortedValues lists a map's values by key.
func sortedValues[V any](m map[string]V) []V {
	keys := sortedKeys(m)
	out := make([]V, len(keys))
	for i, k := range keys {
		out[i] = m[k]
	}
	return out
}

func init() { Register(GradesFold) }
