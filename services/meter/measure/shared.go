package measure

import (
	"slices"

	"github.com/factline/factline/events"
)

// sharedValues keeps one copy of the values a suite's runs repeat. Every
// fact read from the log is decoded into strings and slices of its own,
// so 50,000 runs of one case × treatment pair would otherwise hold 50,000
// copies of its digests and identity components. It grows with the
// distinct values (cases, treatments, identities, runners, instruments),
// not with the runs.
type sharedValues struct {
	strs  map[string]string
	comps map[events.Digest][]events.Component
	// instruments holds the distinct score-less instrument lists of
	// compact verdicts (a passing grade's is the same for every run of a
	// case), at most maxSharedInstruments of them.
	instruments [][]events.InstrumentResult
}

// maxSharedInstruments bounds the instrument lists kept to share: a
// suite whose grades differ more keeps each its own, as before.
const maxSharedInstruments = 64

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

// body returns b with the values other runs repeat replaced by their kept
// copies. b is a copy: the fact it came from is left as it was.
func (s *sharedValues) body(b events.Body) events.Body {
	switch b := b.(type) {
	case events.RunRequested:
		b.Case, b.Treatment = share(s, b.Case), share(s, b.Treatment)
		b.CaseDigest, b.TreatmentDigest = share(s, b.CaseDigest), share(s, b.TreatmentDigest)
		b.Identity = share(s, b.Identity)
		b.Components = s.components(b.Identity, b.Components)
		return b
	case events.RunClaimed:
		b.Runner, b.Identity = share(s, b.Runner), share(s, b.Identity)
		return b
	case events.RunEnded:
		b.Status, b.Reason = share(s, b.Status), share(s, b.Reason)
		return b
	case events.GradeVerdict:
		ins := make([]events.InstrumentResult, len(b.Verdict.Instruments))
		for i, r := range b.Verdict.Instruments {
			ins[i] = events.InstrumentResult{Instrument: share(s, r.Instrument), Version: share(s, r.Version), Required: r.Required,
				Outcome: share(s, r.Outcome), Score: r.Score}
		}
		b.Verdict.Instruments = ins
		return b
	}
	return b
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

// verdict returns v, compact, with one copy of what other grades repeat:
// its snapshot is the run's sealed one (snapshot, when equal), and its
// instruments, without details, evidence or scores, the same list as an
// earlier grade's when equal.
func (s *sharedValues) verdict(v events.GraderVerdict, snapshot events.Digest) events.GraderVerdict {
	if v.SnapshotID == snapshot {
		v.SnapshotID = snapshot
	}
	if len(v.Instruments) == 0 || slices.ContainsFunc(v.Instruments, func(r events.InstrumentResult) bool {
		return r.Score != nil || r.Detail != "" || r.Evidence != nil
	}) {
		return v
	}
	for _, kept := range s.instruments {
		if slices.EqualFunc(kept, v.Instruments, func(a, b events.InstrumentResult) bool {
			return a.Instrument == b.Instrument && a.Version == b.Version && a.Required == b.Required && a.Outcome == b.Outcome
		}) {
			v.Instruments = kept
			return v
		}
	}
	if len(s.instruments) < maxSharedInstruments {
		s.instruments = append(s.instruments, v.Instruments)
	}
	return v
}
