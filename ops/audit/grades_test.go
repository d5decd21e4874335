package audit

import (
	"cmp"
	"strings"
	"testing"

	"github.com/factline/factline/events"
	"github.com/factline/factline/services/grader/grade"
)

var snap = events.DigestOf([]byte("sealed workspace"))

// The case's plan in these tests: tests required, lint advisory but
// binding, style advisory and not binding.
var casePlan = grade.Policy{Instruments: []grade.Instrument{
	{ID: "tests", Version: "1", Required: true, Binding: true, Requirement: "tests"},
	{ID: "lint", Version: "1", Binding: true, Requirement: "clean"},
	{ID: "style", Version: "1", Requirement: "style"},
}}

// ended is a run that sealed a candidate and ended, ungraded.
func ended(t *testing.T) *runLog {
	l := &runLog{t: t}
	l.add(events.RunClaimed{Runner: "a", Lease: 1})
	l.add(events.CandidateSealed{SnapshotDigest: snap})
	l.add(events.RunEnded{Status: events.RunDone, Reason: "done"})
	return l
}

// gradeAs appends what the grader appends for plan p: a result for each
// instrument of the plan that has none yet and an outcome in outcomes
// (the others never ran), then the conflicts and the verdict the core
// decides.
func (l *runLog) gradeAs(p grade.Policy, outcomes map[string]events.InstrumentOutcome) {
	l.t.Helper()
	for _, in := range grade.Fold(l.facts).Pending(snap, p) {
		if o, ok := outcomes[in.Key().String()]; ok {
			l.add(events.GradeInstrument{SnapshotDigest: snap, Result: events.InstrumentResult{
				Instrument: in.ID, Version: in.Version, Required: in.Required, Outcome: o, Detail: in.Key().String() + " said " + string(o)}})
		}
	}
	d := grade.Decide(grade.Fold(l.facts), cmp.Or(l.run, "r"), snap, p)
	for _, c := range d.Conflicts {
		l.add(c)
	}
	if d.Verdict != nil {
		l.add(events.GradeVerdict{Verdict: *d.Verdict})
	}
}

// with replaces instrument id of p by version v (a regrade's plan).
func with(p grade.Policy, id events.InstrumentID, v string) grade.Policy {
	q := p
	q.Instruments = append([]grade.Instrument(nil), p.Instruments...)
	for i := range q.Instruments {
		if q.Instruments[i].ID == id {
			q.Instruments[i].Version = v
		}
	}
	return q
}

var (
	passed  = events.InstrumentPassed
	failed  = events.InstrumentFailed
	errored = events.InstrumentErrored
)

func allPass() map[string]events.InstrumentOutcome {
	return map[string]events.InstrumentOutcome{"tests@1": passed, "lint@1": passed, "style@1": passed}
}

// honestGrades are logs the grader writes, each of a rule the audit must
// follow exactly.
func honestGrades(t *testing.T) map[string]*runLog {
	out := map[string]*runLog{}

	l := ended(t)
	l.gradeAs(casePlan, allPass())
	out["passed"] = l

	l = ended(t)
	o := allPass()
	o["tests@1"] = failed
	l.gradeAs(casePlan, o)
	out["a required instrument failed"] = l

	l = ended(t)
	o = allPass()
	o["lint@1"] = failed
	l.gradeAs(casePlan, o)
	out["an advisory binding instrument failed"] = l

	l = ended(t)
	o = allPass()
	o["style@1"] = failed
	l.gradeAs(casePlan, o)
	out["an advisory instrument failed without binding"] = l

	l = ended(t)
	o = allPass()
	o["tests@1"] = errored
	l.gradeAs(casePlan, o)
	o["tests@2"] = passed
	l.gradeAs(with(casePlan, "tests", "2"), o)
	out["pending, then a new version resumes it"] = l

	l = ended(t)
	l.gradeAs(casePlan, allPass())
	o = allPass()
	o["tests@2"] = failed
	l.gradeAs(with(casePlan, "tests", "2"), o)
	out["a regrade that conflicts"] = l

	l = ended(t)
	o = allPass()
	delete(o, "style@1")
	l.gradeAs(casePlan, o)
	out["an advisory instrument never ran"] = l

	l = &runLog{t: t}
	l.add(events.RunClaimed{Runner: "a", Lease: 1})
	l.add(events.RunEnded{Status: events.RunErrored, Reason: "crash"})
	l.add(events.GradeVerdict{Verdict: *grade.DecideInvalid(grade.Fold(l.facts), "r").Verdict})
	out["no candidate"] = l
	return out
}

func caseGrading(suite, run string) (grade.Policy, bool) { return casePlan, true }

func TestHonestGradesPass(t *testing.T) {
	for name, l := range honestGrades(t) {
		if vs := Check(l.facts, Options{Finished: true}); len(vs) != 0 {
			t.Errorf("%s, from its facts: %v", name, vs)
		}
		if vs := Check(l.facts, Options{Finished: true, Grading: caseGrading}); len(vs) != 0 {
			t.Errorf("%s, under its case: %v", name, vs)
		}
	}
	// The case lets an advisory instrument be missing: only the plan from
	// the case says so, and the facts alone must not refuse it either.
	allow := casePlan
	allow.AllowMissingAdvisory = true
	l := ended(t)
	o := allPass()
	delete(o, "style@1")
	l.gradeAs(allow, o)
	if _, ok := l.last().Body.(events.GradeVerdict).Verdict.Result.Variant().(events.VerdictPassed); !ok {
		t.Fatalf("the scenario does not pass: %v", l.last().Body)
	}
	if vs := Check(l.facts, Options{}); len(vs) != 0 {
		t.Errorf("a missing advisory instrument the case allows, from the facts: %v", vs)
	}
	grading := func(string, string) (grade.Policy, bool) { return allow, true }
	if vs := Check(l.facts, Options{Grading: grading}); len(vs) != 0 {
		t.Errorf("a missing advisory instrument the case allows, under its case: %v", vs)
	}
}

// verdictAt returns the index of the run's newest grade.verdict.
func verdictAt(t *testing.T, l *runLog) int {
	t.Helper()
	for i := len(l.facts) - 1; i >= 0; i-- {
		if _, ok := l.facts[i].Body.(events.GradeVerdict); ok {
			return i
		}
	}
	t.Fatal("no verdict")
	return 0
}

// editVerdict changes the newest verdict in place, keeping its fact ID.
func editVerdict(t *testing.T, l *runLog, edit func(*events.GraderVerdict)) events.Fact {
	t.Helper()
	i := verdictAt(t, l)
	v := l.facts[i].Body.(events.GradeVerdict)
	edit(&v.Verdict)
	l.facts[i].Body = v
	return l.facts[i]
}

func wantViolation(t *testing.T, vs []Violation, rule string, says ...string) {
	t.Helper()
	for _, v := range vs {
		if v.Rule != rule {
			continue
		}
		ok := true
		for _, s := range says {
			ok = ok && strings.Contains(v.Detail, s)
		}
		if ok {
			return
		}
	}
	t.Fatalf("want a %s violation saying %q, got %v", rule, says, vs)
}

// The outside report's edit: a failed verdict flipped to passed and its
// veto to non-binding, while its instrument's result still says failed.
func TestAVerdictFlippedToPassedFails(t *testing.T) {
	for _, grading := range []func(string, string) (grade.Policy, bool){nil, caseGrading} {
		l := honestGrades(t)["a required instrument failed"]
		result := l.facts[3] // the grade.instrument of tests@1
		v := editVerdict(t, l, func(v *events.GraderVerdict) {
			v.Result = events.VerdictOK()
			v.Vetoes[0].Binding = false
		})
		vs := Check(l.facts, Options{Grading: grading})
		wantViolation(t, vs, RuleVerdictDerived, v.ID.String(), "records passed, the rules derive failed", "tests@1 failed", result.ID.String())
	}
}

// Flipping what the verdict says of the instrument too (advisory now)
// does not make it agree: the result committed says it was run as
// required.
func TestAVerdictThatMakesItsFailedInstrumentAdvisoryFails(t *testing.T) {
	l := honestGrades(t)["a required instrument failed"]
	v := editVerdict(t, l, func(v *events.GraderVerdict) {
		v.Result = events.VerdictOK()
		v.Vetoes[0].Binding = false
		v.Instruments[0].Required = false
	})
	wantViolation(t, Check(l.facts, Options{}), RuleVerdictDerived, v.ID.String(), "records passed, the rules derive failed")
}

// An advisory instrument binds only by the case's word: where the case is
// known, a veto made non-binding does not pass the grade.
func TestAnAdvisoryBindingVetoMadeNonBindingFailsUnderTheCase(t *testing.T) {
	l := honestGrades(t)["an advisory binding instrument failed"]
	v := editVerdict(t, l, func(v *events.GraderVerdict) {
		v.Result = events.VerdictOK()
		v.Vetoes[0].Binding = false
	})
	wantViolation(t, Check(l.facts, Options{Grading: caseGrading}), RuleVerdictDerived, v.ID.String(),
		"records passed, the rules derive failed", "it records vetoes [non-binding on lint", "the rules derive [binding on lint")
}

func TestAVerdictThatLeavesOutAFailedInstrumentFails(t *testing.T) {
	l := honestGrades(t)["a required instrument failed"]
	v := editVerdict(t, l, func(v *events.GraderVerdict) {
		v.Result = events.VerdictOK()
		v.Vetoes = nil
		v.Instruments = v.Instruments[1:]
	})
	wantViolation(t, Check(l.facts, Options{}), RuleVerdictDerived, v.ID.String(), "leaves out tests@1")
	wantViolation(t, Check(l.facts, Options{Grading: caseGrading}), RuleVerdictDerived, v.ID.String(), "the case declares [tests lint style]")
}

// A revision whose instruments are the revision's before it is none the
// grader appends (it would only restate, or quietly rewrite, a grade).
func TestARevisionThatIsNotDueFails(t *testing.T) {
	l := honestGrades(t)["a required instrument failed"]
	v := l.facts[verdictAt(t, l)].Body.(events.GradeVerdict)
	v.Verdict.Revision = 2
	v.Verdict.Result = events.VerdictOK()
	v.Verdict.Vetoes[0].Binding = false
	l.add(v)
	wantViolation(t, Check(l.facts, Options{}), RuleVerdictDerived, "revision 2", "append no verdict here")
}

func TestAConflictLeftOutOrInventedFails(t *testing.T) {
	l := honestGrades(t)["a regrade that conflicts"]
	var at int
	for i, f := range l.facts {
		if _, ok := f.Body.(events.GradeConflict); ok {
			at = i
		}
	}
	dropped := &runLog{t: t, facts: append(append([]events.Fact{}, l.facts[:at]...), l.facts[at+1:]...)}
	for i := at; i < len(dropped.facts); i++ {
		dropped.facts[i].Position--
	}
	wantViolation(t, Check(dropped.facts, Options{}), RuleConflictDerived, "revision 2", "raises a grade.conflict the log does not hold", "tests")
	l.add(events.GradeConflict{SnapshotDigest: snap, Revision: 2, ConflictsWith: 1, Instrument: "lint", Reason: "invented"})
	wantViolation(t, Check(l.facts, Options{}), RuleConflictDerived, l.last().ID.String(), "none the grader's rules raise")
}

func TestAnInvalidGradeOfARunWithACandidateFails(t *testing.T) {
	l := ended(t)
	l.add(events.GradeVerdict{Verdict: events.GraderVerdict{AttemptID: "r", SnapshotID: grade.NoCandidate, Revision: 1,
		Result: events.VerdictNoAnswer("no candidate was sealed")}})
	wantViolation(t, Check(l.facts, Options{}), RuleVerdictDerived, l.last().ID.String(), "append no verdict here")
}
