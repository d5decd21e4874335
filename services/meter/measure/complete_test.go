package measure

import (
	"bytes"
	"strings"
	"testing"

	"github.com/factline/factline/events"
)

// regrade commits a later revision of an attempt's grade, and the
// conflicts the grader appends with it.
func (l *suiteLog) regrade(c, t string, trial, revision uint32, result events.VerdictResult, conflicts ...events.GradeConflict) {
	m := l.member(c, t, trial)
	l.add(m.Run, events.GradeVerdict{Verdict: events.GraderVerdict{AttemptID: m.Run, SnapshotID: d(m.Run), Revision: revision,
		Instruments: []events.InstrumentResult{{Instrument: "tests", Version: "2", Required: true, Outcome: events.InstrumentFailed}},
		Result:      result}}, events.OwnerGrader)
	for _, k := range conflicts {
		k.SnapshotDigest = d(m.Run)
		l.add(m.Run, k, events.OwnerGrader)
	}
}

// Seed 000: contradictory grade records defeat completeness claims. A
// grade.conflict keeps the attempt out of pass/fail and the suite from
// complete until a later revision settles it, and the report says so.
func TestAConflictDefeatsCompleteness(t *testing.T) {
	l := newSuite(t, submitted([]string{"c1", "c2"}, []string{"A"}, 2))
	for _, c := range []string{"c1", "c2"} {
		for trial := uint32(1); trial <= 2; trial++ {
			l.attempt(c, "A", trial, events.RunDone, u64(10), pass)
		}
	}
	if r := l.report(); !r.Complete || r.Treatments[0].Passed != 4 {
		t.Fatalf("before the conflict: complete %v, %+v", r.Complete, r.Treatments[0])
	}
	conflict := events.GradeConflict{Revision: 2, ConflictsWith: 1, Instrument: "tests", Reason: "tests v2 fails what v1 passed"}
	l.regrade("c1", "A", 1, 2, events.VerdictFail(), conflict)

	r := l.report()
	a := r.Treatments[0]
	if r.Complete {
		t.Fatal("a suite with an unresolved grade.conflict is reported complete")
	}
	if a.Disputed != 1 || a.Graded != 3 || a.Passed != 3 || a.Failed != 0 || a.Conflicted != 1 {
		t.Fatalf("the disputed attempt is counted in pass/fail: %+v", a)
	}
	row := r.Attempts[0]
	if row.Outcome != OutcomeDisputed || !strings.Contains(row.Reason, "grade.conflict") || !strings.Contains(row.Reason, "tests v2 fails") {
		t.Fatalf("the attempt does not say it is disputed: %+v", row)
	}
	var table bytes.Buffer
	if err := WriteTable(&table, r); err != nil {
		t.Fatal(err)
	}
	if head, _, _ := strings.Cut(table.String(), "\n"); !strings.Contains(head, "not complete: 1 disputed by an unresolved grade.conflict") {
		t.Fatalf("the table's heading does not say why the suite is not complete: %q", head)
	}

	// A conflict the grader appended with a revision whose verdict is not
	// folded yet disputes the grade too.
	early := newSuite(t, submitted([]string{"c1"}, []string{"A"}, 2))
	early.attempt("c1", "A", 1, events.RunDone, u64(1), pass)
	early.attempt("c1", "A", 2, events.RunDone, u64(1), pass)
	m := early.member("c1", "A", 1)
	early.add(m.Run, events.GradeConflict{SnapshotDigest: d(m.Run), Revision: 2, ConflictsWith: 1, Instrument: "tests", Reason: "r"}, events.OwnerGrader)
	if r := early.report(); r.Complete || r.Attempts[0].Outcome != OutcomeDisputed {
		t.Fatalf("a conflict ahead of its verdict: complete %v, %+v", r.Complete, r.Attempts[0])
	}

	// A later revision that agrees with the one before it (no conflict of
	// its own) settles the dispute: the attempt counts as that revision.
	l.regrade("c1", "A", 1, 3, events.VerdictFail())
	r = l.report()
	if a := r.Treatments[0]; !r.Complete || a.Disputed != 0 || a.Failed != 1 || a.Passed != 3 || a.Conflicted != 1 {
		t.Fatalf("after the settling revision: complete %v, %+v", r.Complete, a)
	}
	if rep := r.Reported(d("report")); rep.Passed+rep.Failed+rep.Pending+rep.Invalid+rep.Abstained+rep.Excluded != rep.Attempts {
		t.Fatalf("suite.reported does not add up: %+v", rep)
	}
}

// Seed 000: a single model trial is a smoke read, and the report says so.
func TestOneTrialIsASmokeRead(t *testing.T) {
	for _, trials := range []uint32{1, 2} {
		l := newSuite(t, submitted([]string{"c1"}, []string{"A"}, trials))
		for trial := uint32(1); trial <= trials; trial++ {
			l.attempt("c1", "A", trial, events.RunDone, u64(1), pass)
		}
		r := l.report()
		var table bytes.Buffer
		if err := WriteTable(&table, r); err != nil {
			t.Fatal(err)
		}
		said := strings.Contains(table.String(), "smoke read")
		if r.Smoke != (trials == 1) || said != (trials == 1) {
			t.Errorf("%d trials: smoke %v, the table says it %v:\n%s", trials, r.Smoke, said, table.String())
		}
	}
}

// A bootstrap over one case resamples that case every time: its interval
// has zero width whatever the data. It is withheld, as the clustered SE is,
// and the table prints no interval.
func TestABootstrapOverOneCaseIsWithheld(t *testing.T) {
	l := newSuite(t, submitted([]string{"c1"}, []string{"A", "B"}, 5))
	for trial := uint32(1); trial <= 5; trial++ {
		l.attempt("c1", "A", trial, events.RunDone, u64(1), pass)
		res := pass
		if trial <= 2 {
			res = fail
		}
		l.attempt("c1", "B", trial, events.RunDone, u64(1), res)
	}
	r := l.report()
	c := r.Comparisons[0]
	if c.Difference != nil || !strings.Contains(c.Withheld, "1 case") {
		t.Fatalf("the interval over one case: %+v, withheld %q", c.Difference, c.Withheld)
	}
	if c.RateA == nil || *c.RateA != 1 || c.RateB == nil || *c.RateB != 0.6 || c.McNemar == nil {
		t.Fatalf("the rates and McNemar stay: %+v", c)
	}
	if r.Treatments[0].ClusteredSE != nil {
		t.Fatal("a clustered SE over one case")
	}
	var table bytes.Buffer
	if err := WriteTable(&table, r); err != nil {
		t.Fatal(err)
	}
	if out := table.String(); strings.Contains(out, "[+40.0, +40.0]") || !strings.Contains(out, "+40.0 pts") || !strings.Contains(out, "withheld") {
		t.Fatalf("the table:\n%s", out)
	}
}

// A comparison whose identities do not match (trials of one treatment on
// one case recorded or ran as different agents) or are unknown refuses the
// paired difference, its interval and McNemar, and names what differs or
// that it is unknown.
func TestMismatchedIdentitiesRefuseThePairedStatistics(t *testing.T) {
	base := []events.Component{{Name: "harness", Value: "0.1.0"}, {Name: "model", Value: "m1"}}
	other := []events.Component{{Name: "harness", Value: "0.2.0"}, {Name: "model", Value: "m1"}}
	run := func(t *testing.T, mutate func(l *suiteLog)) Comparison {
		l := newSuite(t, submitted([]string{"c1", "c2"}, []string{"A", "B"}, 2))
		l.comps["A"], l.comps["B"] = base, []events.Component{{Name: "harness", Value: "0.1.0"}, {Name: "model", Value: "m2"}}
		mutate(l)
		for _, c := range []string{"c1", "c2"} {
			for trial := uint32(1); trial <= 2; trial++ {
				l.attempt(c, "A", trial, events.RunDone, u64(1), pass)
				l.attempt(c, "B", trial, events.RunDone, u64(1), fail)
			}
		}
		return l.report().Comparisons[0]
	}
	refused := func(t *testing.T, c Comparison, says string) {
		t.Helper()
		if c.Label != LabelUnknown || c.Difference != nil || c.McNemar != nil || c.RateA != nil || c.RateB != nil {
			t.Fatalf("paired statistics of unmatched identities: %+v", c)
		}
		if !strings.Contains(c.Withheld, "McNemar") || !strings.Contains(c.Withheld, says) {
			t.Fatalf("withheld %q, want it to name %q", c.Withheld, says)
		}
	}
	t.Run("matching", func(t *testing.T) {
		if c := run(t, func(*suiteLog) {}); c.Label != LabelAblation || c.Difference == nil || c.McNemar == nil || c.Withheld != "" {
			t.Fatalf("%+v", c)
		}
	})
	t.Run("trials recorded different identities", func(t *testing.T) {
		c := run(t, func(l *suiteLog) {
			m := l.member("c1", "A", 2)
			l.add(m.Run, events.RunRequested{Case: "c1", CaseDigest: d("case:c1"), Treatment: "A", TreatmentDigest: d("treatment:A"),
				Trial: 2, Identity: d("other"), Components: other}, events.OwnerMeter)
		})
		refused(t, c, "harness differ")
	})
	t.Run("trials ran as different agents", func(t *testing.T) {
		c := run(t, func(l *suiteLog) {
			for trial, id := range map[uint32]string{1: "x", 2: "y"} {
				m := l.member("c2", "B", trial)
				l.add(m.Run, events.RunClaimed{Runner: "r0", Lease: 1, Identity: d(id)}, events.OwnerRunner)
			}
		})
		refused(t, c, "ran as different agents")
	})
	t.Run("unknown", func(t *testing.T) {
		c := run(t, func(l *suiteLog) { l.comps["B"] = []events.Component{} })
		refused(t, c, "identity unknown")
	})
}
