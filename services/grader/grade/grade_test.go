package grade

import (
	"fmt"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/factline/factline/events"
)

// A small builder of run logs: facts as the runner and the grader commit
// them, in order.
type logb struct {
	t     *testing.T
	facts []events.Fact
}

const run = "r1"

var snap = events.DigestOf([]byte("snapshot"))

func newLog(t *testing.T) *logb {
	l := &logb{t: t}
	l.add(events.RunRequested{Case: "c", CaseDigest: events.DigestOf([]byte("c")), Treatment: "t",
		TreatmentDigest: events.DigestOf([]byte("t")), Trial: 1})
	return l
}

func (l *logb) add(b events.Body) *logb {
	l.t.Helper()
	owner := b.Kind().Owner()
	if b.Kind() == events.KindRunRequested {
		owner = events.OwnerMeter
	}
	f, err := events.NewFact(events.Meta{Suite: "s", Run: run, TaskGeneration: 1, Position: uint64(len(l.facts) + 1),
		Producer: events.Producer{Service: owner, Instance: "test"}, At: time.Unix(1, 0)}, b)
	if err != nil {
		l.t.Fatal(err)
	}
	l.facts = append(l.facts, f)
	return l
}

func (l *logb) sealed() *logb {
	return l.add(events.CandidateSealed{SnapshotDigest: snap, Files: 1})
}

func (l *logb) ended() *logb {
	return l.add(events.RunEnded{Status: events.RunDone, Reason: "done"})
}

func (l *logb) result(id events.InstrumentID, version string, o events.InstrumentOutcome) *logb {
	return l.add(events.GradeInstrument{SnapshotDigest: snap, Result: events.InstrumentResult{
		Instrument: id, Version: version, Outcome: o, Detail: string(o)}})
}

// decide applies Decide and appends what it returns, as the shell does.
func (l *logb) decide(p Policy) Decision {
	d := Decide(Fold(l.facts), run, snap, p)
	if d.Verdict != nil {
		l.add(events.GradeVerdict{Verdict: *d.Verdict})
	}
	for _, c := range d.Conflicts {
		l.add(c)
	}
	return d
}

func req(id events.InstrumentID) Instrument {
	return Instrument{ID: id, Version: "1", Required: true, Binding: true, Requirement: events.RequirementID(id)}
}

func advisory(id events.InstrumentID, binding bool) Instrument {
	return Instrument{ID: id, Version: "1", Binding: binding, Requirement: events.RequirementID(id)}
}

func policy(allow bool, ins ...Instrument) Policy {
	return Policy{Instruments: ins, AllowMissingAdvisory: allow}
}

func pendingOf(t *testing.T, v *events.GraderVerdict) []events.InstrumentID {
	t.Helper()
	p, ok := v.Result.Variant().(events.VerdictPending)
	if !ok {
		t.Fatalf("verdict %s, want pending", v.Result.Type())
	}
	return p.Instruments
}

// Every verdict the core decides must be a valid fact body.
func valid(t *testing.T, d Decision) {
	t.Helper()
	if d.Verdict != nil {
		if err := events.ValidateBody(events.GradeVerdict{Verdict: *d.Verdict}); err != nil {
			t.Fatalf("the decided verdict is not a valid fact: %v", err)
		}
	}
	for _, c := range d.Conflicts {
		if err := events.ValidateBody(c); err != nil {
			t.Fatalf("a decided conflict is not a valid fact: %v", err)
		}
	}
}

// Rule: a missing or errored required instrument leaves the attempt pending,
// not failed, even when another required instrument failed.
func TestMissingOrErroredRequiredInstrumentIsPendingNotFailed(t *testing.T) {
	p := policy(false, req("tests"), req("lint"), req("scope"))
	for name, l := range map[string]*logb{
		"missing": newLog(t).sealed().result("tests", "1", events.InstrumentPassed).result("scope", "1", events.InstrumentPassed),
		"errored": newLog(t).sealed().result("tests", "1", events.InstrumentPassed).result("lint", "1", events.InstrumentErrored).
			result("scope", "1", events.InstrumentPassed),
		"not run": newLog(t).sealed().result("tests", "1", events.InstrumentPassed).result("lint", "1", events.InstrumentNotRun).
			result("scope", "1", events.InstrumentPassed),
		"errored beside a failure": newLog(t).sealed().result("tests", "1", events.InstrumentFailed).result("lint", "1", events.InstrumentErrored).
			result("scope", "1", events.InstrumentPassed),
	} {
		t.Run(name, func(t *testing.T) {
			d := l.decide(p)
			valid(t, d)
			if got := pendingOf(t, d.Verdict); !slices.Equal(got, []events.InstrumentID{"lint"}) {
				t.Fatalf("pending on %v, want [lint]", got)
			}
		})
	}
}

// Rule: an advisory instrument may be missing only if the case allows it,
// and a missing one never counts as agreement.
func TestAdvisoryMayBeMissingOnlyWhenAllowed(t *testing.T) {
	build := func() *logb {
		return newLog(t).sealed().result("tests", "1", events.InstrumentPassed).result("review", "1", events.InstrumentAbstained)
	}
	l := build()
	d := l.decide(policy(false, req("tests"), advisory("review", true)))
	valid(t, d)
	if got := pendingOf(t, d.Verdict); !slices.Equal(got, []events.InstrumentID{"review"}) {
		t.Fatalf("not allowed: pending on %v, want [review]", got)
	}
	l = build()
	d = l.decide(policy(true, req("tests"), advisory("review", true)))
	valid(t, d)
	if d.Verdict.Result.Type() != "passed" {
		t.Fatalf("allowed: %s, want passed", d.Verdict.Result.Type())
	}
	// Recorded as what it was, not as a pass.
	for _, r := range d.Verdict.Instruments {
		if r.Instrument == "review" && r.Outcome != events.InstrumentAbstained {
			t.Fatalf("the missing advisory result is recorded as %s", r.Outcome)
		}
	}
	// Allowed but absent altogether: listed as not_run.
	l = newLog(t).sealed().result("tests", "1", events.InstrumentPassed)
	d = l.decide(policy(true, req("tests"), advisory("review", false)))
	valid(t, d)
	if d.Verdict.Result.Type() != "passed" || d.Verdict.Instruments[1].Outcome != events.InstrumentNotRun {
		t.Fatalf("absent advisory: %+v", d.Verdict)
	}
}

func TestMissingAdvisoryNeverCountsAsAgreement(t *testing.T) {
	// Only advisory instruments, all missing, and the case allows it: no
	// instrument agreed, so the grade is not passed.
	l := newLog(t).sealed().result("review", "1", events.InstrumentErrored)
	d := l.decide(policy(true, advisory("review", true), advisory("style", false)))
	valid(t, d)
	if d.Verdict.Result.Type() != "abstained" {
		t.Fatalf("%s, want abstained", d.Verdict.Result.Type())
	}
	// The same plan with one advisory pass does pass.
	l = newLog(t).sealed().result("review", "1", events.InstrumentPassed)
	if d := l.decide(policy(true, advisory("review", true), advisory("style", false))); d.Verdict.Result.Type() != "passed" {
		t.Fatalf("%s, want passed", d.Verdict.Result.Type())
	}
}

// Rule: an invalid answer (no candidate) differs from a check that never
// ran.
func TestInvalidAnswerDiffersFromCheckThatNeverRan(t *testing.T) {
	noCandidate := newLog(t).ended()
	d := DecideInvalid(Fold(noCandidate.facts), run)
	valid(t, d)
	if d.Verdict == nil || d.Verdict.Result.Type() != "invalid" || d.Verdict.SnapshotID != NoCandidate {
		t.Fatalf("no candidate: %+v", d.Verdict)
	}
	noCandidate.add(events.GradeVerdict{Verdict: *d.Verdict})
	if again := DecideInvalid(Fold(noCandidate.facts), run); again.Verdict != nil {
		t.Fatal("the invalid grade was decided twice")
	}
	// A run still going, or one with a candidate, is not invalid.
	if d := DecideInvalid(Fold(newLog(t).facts), run); d.Verdict != nil {
		t.Fatal("a run that has not ended was graded invalid")
	}
	if d := DecideInvalid(Fold(newLog(t).sealed().ended().facts), run); d.Verdict != nil {
		t.Fatal("a run with a candidate was graded invalid")
	}
	neverRan := newLog(t).sealed().ended().result("tests", "1", events.InstrumentNotRun)
	d = neverRan.decide(policy(false, req("tests")))
	if d.Verdict.Result.Type() != "pending" {
		t.Fatalf("a check that never ran: %s, want pending", d.Verdict.Result.Type())
	}
}

// Rule: a resumed grader runs exactly the pending instruments.
func TestResumeRunsExactlyThePendingInstruments(t *testing.T) {
	p := policy(false, req("tests"), req("answer"), req("scope"), advisory("review", false))
	l := newLog(t).sealed().result("tests", "1", events.InstrumentPassed).result("scope", "1", events.InstrumentFailed)
	got := Fold(l.facts).Pending(snap, p)
	want := []Instrument{req("answer"), advisory("review", false)}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("pending %+v, want %+v", got, want)
	}
	// An errored result is a result: it is not run again by a resume (a
	// re-grade does that), so the grade can settle as pending.
	l.result("answer", "1", events.InstrumentErrored).result("review", "1", events.InstrumentPassed)
	if got := Fold(l.facts).Pending(snap, p); len(got) != 0 {
		t.Fatalf("nothing should be pending, got %+v", got)
	}
	// A result of another version does not count for this plan.
	p2 := policy(false, Instrument{ID: "tests", Version: "2", Required: true, Binding: true, Requirement: "tests"})
	if got := Fold(l.facts).Pending(snap, p2); len(got) != 1 || got[0].Version != "2" {
		t.Fatalf("a new version must run: %+v", got)
	}
}

func TestVetoes(t *testing.T) {
	// A failed advisory instrument raises a veto; it binds only when the
	// case says so.
	l := newLog(t).sealed().result("tests", "1", events.InstrumentPassed).result("review", "1", events.InstrumentFailed)
	d := l.decide(policy(false, req("tests"), advisory("review", false)))
	valid(t, d)
	if d.Verdict.Result.Type() != "passed" || len(d.Verdict.Vetoes) != 1 || d.Verdict.Vetoes[0].Binding {
		t.Fatalf("non-binding veto: %+v", d.Verdict)
	}
	if ev := d.Verdict.Vetoes[0].Evidence; len(ev) != 1 || string(ev[0]) != l.facts[3].ID.String() {
		t.Fatalf("the veto cites %v, want the grade.instrument fact", ev)
	}
	l = newLog(t).sealed().result("tests", "1", events.InstrumentPassed).result("review", "1", events.InstrumentFailed)
	d = l.decide(policy(false, req("tests"), advisory("review", true)))
	valid(t, d)
	if d.Verdict.Result.Type() != "failed" || !d.Verdict.Vetoes[0].Binding {
		t.Fatalf("binding veto: %+v", d.Verdict)
	}
	// A judge that abstains is not a failure; a required one that abstains
	// leaves the grade abstained.
	l = newLog(t).sealed().result("tests", "1", events.InstrumentPassed).result("review", "1", events.InstrumentAbstained)
	d = l.decide(policy(false, req("tests"), req("review")))
	if d.Verdict.Result.Type() != "abstained" || len(d.Verdict.Vetoes) != 0 {
		t.Fatalf("required judge abstained: %+v", d.Verdict)
	}
}

// Rule: a re-grade under a new instrument version appends a revision and
// changes no earlier one; the unchanged instruments' results are reused.
func TestRegradeAppendsRevision(t *testing.T) {
	v1 := policy(false, req("tests"), req("scope"))
	l := newLog(t).sealed().ended().result("tests", "1", events.InstrumentPassed).result("scope", "1", events.InstrumentPassed)
	first := l.decide(v1)
	if first.Verdict.Revision != 1 || first.Verdict.Result.Type() != "passed" {
		t.Fatalf("first grade %+v", first.Verdict)
	}
	rev1 := l.facts[len(l.facts)-1]
	if d := l.decide(v1); d.Verdict != nil {
		t.Fatal("the same plan graded twice")
	}
	v2 := policy(false, Instrument{ID: "tests", Version: "2", Required: true, Binding: true, Requirement: "tests"}, req("scope"))
	if got := Fold(l.facts).Pending(snap, v2); len(got) != 1 || got[0].Key() != (Key{"tests", "2"}) {
		t.Fatalf("a re-grade runs only the new version: %+v", got)
	}
	l.result("tests", "2", events.InstrumentPassed)
	second := l.decide(v2)
	valid(t, second)
	if second.Verdict.Revision != 2 || len(second.Conflicts) != 0 {
		t.Fatalf("second grade %+v, conflicts %+v", second.Verdict, second.Conflicts)
	}
	st := Fold(l.facts)
	if got := st.Verdicts[snap]; len(got) != 2 || !reflect.DeepEqual(got[0], rev1.Body.(events.GradeVerdict).Verdict) {
		t.Fatal("revision 1 did not stay as it was")
	}
	if latest, _ := st.Latest(snap); latest.Revision != 2 {
		t.Fatalf("latest revision %d", latest.Revision)
	}
}

// Rule: a later check that disagrees appends grade.conflict and changes no
// earlier grade.
func TestDisagreeingLaterCheckAppendsConflict(t *testing.T) {
	l := newLog(t).sealed().ended().result("tests", "1", events.InstrumentPassed)
	l.decide(policy(false, req("tests")))
	before := slices.Clone(l.facts)
	// tests@2 fails where tests@1 passed; a new binding judge fails too.
	l.result("tests", "2", events.InstrumentFailed).result("review", "1", events.InstrumentFailed)
	v2 := policy(false, Instrument{ID: "tests", Version: "2", Required: true, Binding: true, Requirement: "tests"}, advisory("review", true))
	d := l.decide(v2)
	valid(t, d)
	if d.Verdict.Revision != 2 || d.Verdict.Result.Type() != "failed" {
		t.Fatalf("revision 2: %+v", d.Verdict)
	}
	if len(d.Conflicts) != 2 {
		t.Fatalf("conflicts %+v, want one per disagreeing instrument", d.Conflicts)
	}
	for _, c := range d.Conflicts {
		if c.Revision != 2 || c.ConflictsWith != 1 || c.SnapshotDigest != snap {
			t.Errorf("conflict %+v", c)
		}
	}
	if !reflect.DeepEqual(l.facts[:len(before)], before) {
		t.Fatal("an earlier fact changed")
	}
	st := Fold(l.facts)
	if first := st.Verdicts[snap][0]; first.Result.Type() != "passed" || first.Revision != 1 {
		t.Fatalf("revision 1 was rewritten: %+v", first)
	}
	if len(st.Conflicts[snap]) != 2 {
		t.Fatalf("folded conflicts: %+v", st.Conflicts[snap])
	}
}

func TestNoInstrumentsAbstains(t *testing.T) {
	d := newLog(t).sealed().decide(Policy{})
	valid(t, d)
	if d.Verdict.Result.Type() != "abstained" {
		t.Fatalf("%s, want abstained", d.Verdict.Result.Type())
	}
}

// Message IDs live in the namespace of their fact's kind: an instrument a
// case names after one of factline's own words ("verdict", "conflict")
// never takes a verdict's or a conflict's ID. An instrument named verdict
// at version 1 once took the revision-1 verdict's ID, and the attempt
// waited for its grade forever.
func TestMessageIDs(t *testing.T) {
	h := snap.Hex()[:12]
	for got, want := range map[string]string{
		InstrumentMsgID("r1", snap, Key{"tests", "1.2"}): fmt.Sprintf("r1/grade.instrument/%s/tests/1.2", h),
		VerdictMsgID("r1", snap, 3):                      fmt.Sprintf("r1/grade.verdict/%s/3", h),
		ConflictMsgID("r1", snap, 2, "judge"):            fmt.Sprintf("r1/grade.conflict/%s/2/judge", h),
	} {
		if got != want {
			t.Errorf("%s, want %s", got, want)
		}
	}
	for _, k := range []Key{{"verdict", "1"}, {"conflict", "1/judge"}} {
		id := InstrumentMsgID("r1", snap, k)
		if id == VerdictMsgID("r1", snap, 1) || id == ConflictMsgID("r1", snap, 1, "judge") {
			t.Errorf("instrument %s takes a verdict's or a conflict's ID: %s", k, id)
		}
	}
}
