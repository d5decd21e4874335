package measure

import (
	"reflect"
	"slices"

	"github.com/factline/factline/events"
)

// sharedValues keeps one copy of the values a suite's runs repeat. Every
// fact read from the log is decoded into strings and slices of its own,
// so 50,000 runs of one case × treatment pair would otherwise hold 50,000
// copies of its request, its digests and identity components, its end's
// reason and its grade. It grows with the distinct values (cases,
// treatments, identities, instruments, grades), not with the runs, and
// each kind to a bound past which values are kept each their own.
type sharedValues struct {
	strs  map[string]string
	comps map[events.Digest][]events.Component
	// instruments holds the distinct score-less instrument lists of
	// compact verdicts (a passing grade's is the same for every run of a
	// case), at most maxSharedInstruments of them.
	instruments [][]events.InstrumentResult
	requests    map[requestKey]*events.RunRequested
	ends        map[endShape]*endShape
	// grades holds the distinct score-less grades without their attempt,
	// snapshot and revision, by what tells most of them apart.
	grades  map[gradeKey][]*events.GraderVerdict
	nGrades int
	shapes  map[attemptShape]*attemptShape
}

const (
	// maxSharedInstruments bounds the instrument lists kept to share: a
	// suite whose grades differ more keeps each its own, as before.
	maxSharedInstruments = 64
	// maxShared bounds the requests, ends, shapes and grades kept to
	// share: above the case × treatment pairs of most suites, whose runs
	// share a request each; a suite past it (a reason of its own every
	// run) keeps the rest each its own, as before.
	maxShared = 1 << 14
	// maxGradesAKey bounds the grades compared whole to find an equal
	// one: grades that differ in what gradeKey does not tell (a veto's
	// reason of its own every run) are kept each their own past it.
	maxGradesAKey = 8
)

// requestKey is what tells two requests apart but their trial and
// retry_of; components count by their kept copy (sharedValues.components),
// never by value.
type requestKey struct {
	c, cd, t, td, id string
	budget           events.Budget
	comps            *events.Component
	n                int
}

// gradeKey is what tells most grades apart cheaply; grades under one key
// are compared whole.
type gradeKey struct {
	result              string
	vetoes, instruments int
}

// share returns the kept copy of v, keeping v if it is the first.
func share[T ~string](s *sharedValues, v T) T {
	if v == "" {
		return v
	}
	if s.strs == nil {
		s.strs = map[string]string{}
	}
	if kept, ok := s.strs[string(v)]; ok {
		return T(kept)
	}
	s.strs[string(v)] = string(v)
	return v
}

// components returns the kept copy of an identity's components when
// they are the ones first recorded under it (an identity is a digest of
// its components, but a fact could say otherwise: those are kept as they
// are).
func (s *sharedValues) components(id events.Digest, comps []events.Component) []events.Component {
	if id == "" || len(comps) == 0 {
		return comps
	}
	if s.comps == nil {
		s.comps = map[events.Digest][]events.Component{}
	}
	kept, ok := s.comps[id]
	switch {
	case !ok:
		kept = make([]events.Component, len(comps))
		for i, c := range comps {
			kept[i] = events.Component{Name: share(s, c.Name), Value: share(s, c.Value)}
		}
		s.comps[id] = kept
		return kept
	case slices.Equal(kept, comps):
		return kept
	}
	return comps
}

// request returns the kept copy of a run.requested without its trial and
// retry_of: the same for every trial of a case × treatment pair.
func (s *sharedValues) request(b events.RunRequested) *events.RunRequested {
	b.Trial, b.RetryOf = 0, ""
	b.Case, b.Treatment = share(s, b.Case), share(s, b.Treatment)
	b.CaseDigest, b.TreatmentDigest = share(s, b.CaseDigest), share(s, b.TreatmentDigest)
	b.Identity = share(s, b.Identity)
	b.Components = s.components(b.Identity, b.Components)
	k := requestKey{c: b.Case, cd: string(b.CaseDigest), t: b.Treatment, td: string(b.TreatmentDigest), id: string(b.Identity),
		budget: b.Budget, n: len(b.Components)}
	if len(b.Components) > 0 {
		if kept := s.comps[b.Identity]; len(kept) == 0 || &kept[0] != &b.Components[0] {
			return &b // components of its own: nothing to share it with
		}
		k.comps = &b.Components[0]
	}
	if kept, ok := s.requests[k]; ok {
		return kept
	}
	if len(s.requests) >= maxShared {
		return &b
	}
	if s.requests == nil {
		s.requests = map[requestKey]*events.RunRequested{}
	}
	s.requests[k] = &b
	return &b
}

// shape returns the kept copy of an attempt's shape (nil for the zero
// one).
func (s *sharedValues) shape(sh attemptShape) *attemptShape {
	if sh == (attemptShape{}) {
		return nil
	}
	return intern(&s.shapes, sh)
}

// end returns the kept copy of a run.ended's status and reason.
func (s *sharedValues) end(status events.RunStatus, reason string) *endShape {
	e := endShape{status: status, reason: reason}
	if _, ok := s.ends[e]; !ok && len(s.ends) < maxShared {
		e.status, e.reason = share(s, status), share(s, reason)
	}
	return intern(&s.ends, e)
}

// intern returns the kept copy of v in m, keeping v if it is new and m
// holds fewer than maxShared: past that, a copy of its own.
func intern[T comparable](m *map[T]*T, v T) *T {
	if kept, ok := (*m)[v]; ok {
		return kept
	}
	kept := &v
	if len(*m) < maxShared {
		if *m == nil {
			*m = map[T]*T{}
		}
		(*m)[v] = kept
	}
	return kept
}

// grade returns a compact verdict without its attempt, snapshot and
// revision (which the run keeps): the kept copy of an equal one when it
// has no scores (a passing grade of a case is the same for every run).
func (s *sharedValues) grade(v events.GraderVerdict) *events.GraderVerdict {
	v.AttemptID, v.SnapshotID, v.Revision = "", "", 0
	v.Instruments = s.instrumentsOf(v.Instruments)
	if v.Scores != nil {
		return &v
	}
	k := gradeKey{result: v.Result.Type(), vetoes: len(v.Vetoes), instruments: len(v.Instruments)}
	for _, kept := range s.grades[k] {
		if reflect.DeepEqual(*kept, v) {
			return kept
		}
	}
	if s.nGrades >= maxShared || len(s.grades[k]) >= maxGradesAKey {
		return &v
	}
	if s.grades == nil {
		s.grades = map[gradeKey][]*events.GraderVerdict{}
	}
	s.grades[k] = append(s.grades[k], &v)
	s.nGrades++
	return &v
}

// instrumentsOf returns a compact verdict's instrument results with one
// copy of the strings and, when none holds a score, of the list other
// grades repeat.
func (s *sharedValues) instrumentsOf(ins []events.InstrumentResult) []events.InstrumentResult {
	if len(ins) == 0 {
		return ins
	}
	scored := slices.ContainsFunc(ins, func(r events.InstrumentResult) bool { return r.Score != nil || r.Detail != "" || r.Evidence != nil })
	if !scored {
		for _, kept := range s.instruments {
			if slices.EqualFunc(kept, ins, func(a, b events.InstrumentResult) bool {
				return a.Instrument == b.Instrument && a.Version == b.Version && a.Required == b.Required && a.Outcome == b.Outcome
			}) {
				return kept
			}
		}
	}
	out := make([]events.InstrumentResult, len(ins))
	for i, r := range ins {
		out[i] = events.InstrumentResult{Instrument: share(s, r.Instrument), Version: share(s, r.Version), Required: r.Required,
			Outcome: share(s, r.Outcome), Score: r.Score, Detail: r.Detail, Evidence: r.Evidence}
	}
	if !scored && len(s.instruments) < maxSharedInstruments {
		s.instruments = append(s.instruments, out)
	}
	return out
}

// compactVerdict is what the report reads of a grade: its instruments'
// details and evidence are the grade's to show (factline view, the
// grader's blobs), never counted, and are left out. Instruments that
// hold any are copied: the fact's own are left as they were.
func compactVerdict(v events.GraderVerdict) events.GraderVerdict {
	if !slices.ContainsFunc(v.Instruments, func(r events.InstrumentResult) bool { return r.Detail != "" || r.Evidence != nil }) {
		return v
	}
	ins := make([]events.InstrumentResult, len(v.Instruments))
	for i, r := range v.Instruments {
		r.Detail, r.Evidence = "", nil
		ins[i] = r
	}
	v.Instruments = ins
	return v
}
