// Package grade is the grader's pure core: it folds a run's facts into what
// the grader has already committed, says which instruments of a grading plan
// still owe a result on a sealed snapshot, and turns instrument results into
// a verdict under the case's policy. It imports only events: no NATS, no
// files, no clock. The shell in package grader runs the instruments and
// commits what this package decides.
//
// The rules (docs/grading.md):
//
//   - No sealed candidate is an invalid answer, not a failure and not a
//     check that never ran.
//   - A required instrument with no result, or one that errored or did not
//     run, leaves the attempt pending, never failed.
//   - An advisory instrument may lack a result only when the case allows
//     it, and a missing result never counts as agreement: a grade with no
//     definitive result at all is abstained, not passed.
//   - A failed instrument raises a veto; the case policy says which vetoes
//     bind. A binding veto or a failed required instrument fails the grade.
//   - A judge that cannot judge abstains; it never fails the candidate.
//   - A new grading plan (a new instrument version) appends a new revision;
//     a revision never rewrites an earlier one. Where a later result
//     disagrees with an earlier revision a grade.conflict is appended, and
//     the earlier grade stays as it was.
package grade

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/factline/factline/events"
)

// Instrument is one instrument of a grading plan, as the verdict rules see
// it.
type Instrument struct {
	ID          events.InstrumentID
	Version     string
	Required    bool
	Binding     bool
	Requirement events.RequirementID
}

// Key names the instrument and version.
func (in Instrument) Key() Key { return Key{in.ID, in.Version} }

// Policy is a grading plan: the instruments, whether an advisory one may
// be missing, and the scorers that score the results beside the verdict.
type Policy struct {
	Instruments          []Instrument
	AllowMissingAdvisory bool
	Scorers              []Scorer
}

// Key names one instrument result: an instrument at a version.
type Key struct {
	ID      events.InstrumentID
	Version string
}

// String renders the key as "<instrument>@<version>".
func (k Key) String() string { return string(k.ID) + "@" + k.Version }

// Recorded is a committed instrument result and the fact that holds it.
type Recorded struct {
	Result events.InstrumentResult
	FactID string
}

// Run is the grader's view of one run, folded from its facts.
type Run struct {
	// Requested is true once the run has its run.requested.
	Requested bool
	// Ended is true once the run has ended; EndStatus says how.
	Ended     bool
	EndStatus events.RunStatus
	// Generation is the newest task generation of the run (at least 1).
	Generation uint32
	// Snapshot is the newest sealed candidate, "" when none was sealed.
	Snapshot events.Digest
	// Results holds the committed instrument results by snapshot.
	Results map[events.Digest]map[Key]Recorded
	// Verdicts holds the committed verdicts by snapshot, in log order.
	Verdicts map[events.Digest][]events.GraderVerdict
	// Conflicts holds the committed conflicts by snapshot.
	Conflicts map[events.Digest][]events.GradeConflict
}

// Fold reads a run's facts, in log order.
func Fold(facts []events.Fact) Run {
	r := Run{
		Generation: 1,
		Results:    map[events.Digest]map[Key]Recorded{},
		Verdicts:   map[events.Digest][]events.GraderVerdict{},
		Conflicts:  map[events.Digest][]events.GradeConflict{},
	}
	for _, f := range facts {
		r.Generation = max(r.Generation, f.TaskGeneration)
		switch b := f.Body.(type) {
		case events.RunRequested:
			r.Requested = true
		case events.RunEnded:
			r.Ended, r.EndStatus = true, b.Status
		case events.CandidateSealed:
			r.Snapshot = b.SnapshotDigest
		case events.GradeInstrument:
			m := r.Results[b.SnapshotDigest]
			if m == nil {
				m = map[Key]Recorded{}
				r.Results[b.SnapshotDigest] = m
			}
			k := Key{b.Result.Instrument, b.Result.Version}
			if _, dup := m[k]; !dup { // the first committed result stands
				m[k] = Recorded{Result: b.Result, FactID: f.ID.String()}
			}
		case events.GradeVerdict:
			s := b.Verdict.SnapshotID
			r.Verdicts[s] = append(r.Verdicts[s], b.Verdict)
		case events.GradeConflict:
			r.Conflicts[b.SnapshotDigest] = append(r.Conflicts[b.SnapshotDigest], b)
		}
	}
	return r
}

// Latest returns the newest revision of the grade of a snapshot.
func (r Run) Latest(snapshot events.Digest) (events.GraderVerdict, bool) {
	var best events.GraderVerdict
	found := false
	for _, v := range r.Verdicts[snapshot] {
		if !found || v.Revision > best.Revision {
			best, found = v, true
		}
	}
	return best, found
}

// Pending returns the instruments of p that have no committed result on
// snapshot, in plan order: exactly what a resumed grader runs.
func (r Run) Pending(snapshot events.Digest, p Policy) []Instrument {
	var out []Instrument
	for _, in := range p.Instruments {
		if _, ok := r.Results[snapshot][in.Key()]; !ok {
			out = append(out, in)
		}
	}
	return out
}

// NoCandidate is the snapshot a verdict names when the run sealed no
// candidate: the digest of the text "factline:no-candidate". It is not the
// digest of any workspace manifest, so it never names a real tree, nor a
// blob (events.BlobRefs passes it over).
var NoCandidate = events.NoCandidate

// missing reports whether an outcome is no result at all for the rules: an
// instrument that errored or did not run has not spoken.
func missing(o events.InstrumentOutcome) bool {
	return o == events.InstrumentErrored || o == events.InstrumentNotRun
}

func definitive(o events.InstrumentOutcome) bool {
	return o == events.InstrumentPassed || o == events.InstrumentFailed
}

// Judge applies the verdict rules to the results of a plan's instruments.
// results maps each plan instrument's key to its committed result, if any;
// candidate says whether a candidate was sealed. It returns the result, the
// instrument results the grade rests on (a plan instrument without a result
// is listed as not_run) and the vetoes.
func Judge(p Policy, results map[Key]Recorded, candidate bool) (events.VerdictResult, []events.InstrumentResult, []events.GradeVeto) {
	if !candidate {
		return events.VerdictNoAnswer("no candidate was sealed: there is no answer to grade"), nil, nil
	}
	if len(p.Instruments) == 0 {
		return events.VerdictAbstain("the case declares no grading instruments"), nil, nil
	}
	var (
		ins      []events.InstrumentResult
		vetoes   []events.GradeVeto
		pending  []events.InstrumentID
		failed   bool
		abstains []string
		passes   int
	)
	for _, in := range p.Instruments {
		rec, ok := results[in.Key()]
		res := rec.Result
		if !ok {
			res = events.InstrumentResult{Instrument: in.ID, Version: in.Version, Required: in.Required,
				Outcome: events.InstrumentNotRun, Detail: "no result"}
		}
		res.Required = in.Required // the plan says what is required, not the record
		ins = append(ins, res)
		switch {
		case missing(res.Outcome) && in.Required:
			pending = append(pending, in.ID)
		case (missing(res.Outcome) || res.Outcome == events.InstrumentAbstained) && !in.Required && !p.AllowMissingAdvisory:
			pending = append(pending, in.ID)
		case res.Outcome == events.InstrumentFailed:
			v := events.GradeVeto{Instrument: in.ID, Requirement: in.Requirement, Reason: res.Detail, Binding: in.Binding}
			if v.Reason == "" {
				v.Reason = "instrument failed"
			}
			if rec.FactID != "" {
				v.Evidence = []events.EvidenceRef{events.EvidenceRef(rec.FactID)}
			}
			vetoes = append(vetoes, v)
			if in.Required || in.Binding {
				failed = true
			}
		case res.Outcome == events.InstrumentAbstained && in.Required:
			abstains = append(abstains, fmt.Sprintf("%s abstained: %s", in.ID, res.Detail))
		case res.Outcome == events.InstrumentPassed:
			passes++
		}
	}
	switch {
	case len(pending) > 0:
		return events.VerdictWaiting(pending...), ins, vetoes
	case failed:
		return events.VerdictFail(), ins, vetoes
	case len(abstains) > 0:
		return events.VerdictAbstain("required instrument " + strings.Join(abstains, "; ")), ins, vetoes
	case passes == 0:
		return events.VerdictAbstain("no instrument produced a definitive result; a missing one is not agreement"), ins, vetoes
	}
	return events.VerdictOK(), ins, vetoes
}

// Decision is what the grader appends once the instruments of a plan have
// run: a new revision of the grade, and the conflicts it raises with the
// revision before it. A zero Decision means there is nothing to append.
type Decision struct {
	Verdict   *events.GraderVerdict
	Conflicts []events.GradeConflict
}

// Decide returns the next revision of the grade of snapshot under plan p,
// or nothing when the newest revision already rests on exactly the plan's
// instruments and versions and was scored by exactly its scorers. It must
// be called after the plan's instruments ran: an instrument without a
// result leaves the grade pending. The scores never change the result.
func Decide(r Run, attempt string, snapshot events.Digest, p Policy) Decision {
	latest, has := r.Latest(snapshot)
	if has && sameKeys(latest.Instruments, p) && sameScorers(latest.Scores, p.Scorers) {
		return Decision{}
	}
	result, ins, vetoes := Judge(p, r.Results[snapshot], true)
	v := &events.GraderVerdict{AttemptID: attempt, SnapshotID: snapshot, Revision: 1,
		Instruments: ins, Vetoes: vetoes, Result: result, Scores: Scores(p.Scorers, ins)}
	if !has {
		return Decision{Verdict: v}
	}
	v.Revision = latest.Revision + 1
	return Decision{Verdict: v, Conflicts: conflicts(snapshot, latest, *v)}
}

// DecideInvalid returns the grade of a run that ended without a sealed
// candidate: invalid, once.
func DecideInvalid(r Run, attempt string) Decision {
	if _, has := r.Latest(NoCandidate); has || !r.Ended || r.Snapshot != "" {
		return Decision{}
	}
	reason := fmt.Sprintf("no candidate was sealed: the run ended %s without a workspace snapshot", r.EndStatus)
	return Decision{Verdict: &events.GraderVerdict{AttemptID: attempt, SnapshotID: NoCandidate, Revision: 1,
		Result: events.VerdictNoAnswer(reason)}}
}

func sameKeys(ins []events.InstrumentResult, p Policy) bool {
	if len(ins) != len(p.Instruments) {
		return false
	}
	have := make([]Key, len(ins))
	for i, r := range ins {
		have[i] = Key{r.Instrument, r.Version}
	}
	for _, in := range p.Instruments {
		if !slices.Contains(have, in.Key()) {
			return false
		}
	}
	return true
}

// conflicts lists where the new revision's instruments disagree with the
// earlier one: an instrument whose definitive outcome flipped (under a new
// version), or a new instrument that failed where the earlier grade passed;
// and where a scorer's measurement moved (scoreConflicts).
func conflicts(snapshot events.Digest, prev, next events.GraderVerdict) []events.GradeConflict {
	before := map[events.InstrumentID]events.InstrumentResult{}
	for _, r := range prev.Instruments {
		before[r.Instrument] = r
	}
	_, prevPassed := prev.Result.Variant().(events.VerdictPassed)
	var out []events.GradeConflict
	for _, r := range next.Instruments {
		if !definitive(r.Outcome) {
			continue
		}
		b, ok := before[r.Instrument]
		var reason string
		switch {
		case ok && definitive(b.Outcome) && b.Outcome != r.Outcome:
			reason = fmt.Sprintf("%s@%s %s where %s@%s %s in revision %d", r.Instrument, r.Version, r.Outcome,
				b.Instrument, b.Version, b.Outcome, prev.Revision)
		case !ok && r.Outcome == events.InstrumentFailed && prevPassed:
			reason = fmt.Sprintf("%s@%s failed; revision %d passed without it", r.Instrument, r.Version, prev.Revision)
		default:
			continue
		}
		out = append(out, events.GradeConflict{SnapshotDigest: snapshot, Revision: next.Revision,
			ConflictsWith: prev.Revision, Instrument: r.Instrument, Reason: reason})
	}
	return scoreConflicts(out, prev, next)
}

// Message IDs of the grader's facts: deterministic, so that a redelivered
// input or a second grader instance cannot commit the same result twice.

// InstrumentMsgID is "<run>/<snapshot-hex12>/<instrument>/<version>".
func InstrumentMsgID(run string, snapshot events.Digest, k Key) string {
	return events.MessageID(run, events.KindGradeInstrument, short(snapshot), string(k.ID), k.Version)
}

// VerdictMsgID is "<run>/<snapshot-hex12>/verdict/<revision>".
func VerdictMsgID(run string, snapshot events.Digest, rev uint32) string {
	return events.MessageID(run, events.KindGradeVerdict, short(snapshot), strconv.FormatUint(uint64(rev), 10))
}

// ConflictMsgID is "<run>/<snapshot-hex12>/conflict/<revision>/<instrument>".
func ConflictMsgID(run string, snapshot events.Digest, rev uint32, in events.InstrumentID) string {
	return events.MessageID(run, events.KindGradeConflict, short(snapshot), strconv.FormatUint(uint64(rev), 10), string(in))
}

func short(d events.Digest) string {
	h := d.Hex()
	return h[:min(12, len(h))]
}
