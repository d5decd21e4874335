package measure

import (
	"strings"
	"testing"

	"github.com/factline/factline/events"
)

// A score that disagrees between revisions is a dispute, never a silent
// overwrite: a grade.conflict the grader appends for a score alone (the
// verdict unchanged) keeps the attempt out of pass/fail, out of the
// scorer's mean, and the suite from complete, exactly as a conflict of
// verdicts does; a later revision that agrees settles both alike.
func TestAScoreOnlyConflictDisputesTheAttemptAsAVerdictConflictDoes(t *testing.T) {
	scored := func(rev uint32, raw float64, res events.VerdictResult, run string) events.GradeVerdict {
		value := (raw - 1) / 4
		return events.GradeVerdict{Verdict: events.GraderVerdict{AttemptID: run, SnapshotID: d(run), Revision: rev, Result: res,
			Instruments: []events.InstrumentResult{{Instrument: "tests", Version: "1", Required: true, Outcome: events.InstrumentPassed}},
			Scores:      []events.Score{{Scorer: "quality", Instrument: "tests", Key: "score", Min: 1, Max: 5, Raw: &raw, Value: &value}}}}
	}
	build := func(scoreOnly, settle bool) Report {
		l := newSuite(t, submitted([]string{"c1", "c2"}, []string{"A"}, 2))
		for _, c := range []string{"c1", "c2"} {
			for trial := uint32(1); trial <= 2; trial++ {
				l.attempt(c, "A", trial, events.RunDone, u64(10), nil)
				m := l.member(c, "A", trial)
				l.add(m.Run, scored(1, 4, events.VerdictOK(), m.Run), events.OwnerGrader)
			}
		}
		m := l.member("c1", "A", 1)
		if scoreOnly {
			l.add(m.Run, scored(2, 2, events.VerdictOK(), m.Run), events.OwnerGrader)
			l.add(m.Run, events.GradeConflict{SnapshotDigest: d(m.Run), Revision: 2, ConflictsWith: 1, Instrument: "tests",
				Reason: "score quality = 2 where revision 1 scored 4"}, events.OwnerGrader)
		} else {
			l.add(m.Run, scored(2, 4, events.VerdictFail(), m.Run), events.OwnerGrader)
			l.add(m.Run, events.GradeConflict{SnapshotDigest: d(m.Run), Revision: 2, ConflictsWith: 1, Instrument: "tests",
				Reason: "tests v2 fails what v1 passed"}, events.OwnerGrader)
		}
		if settle {
			l.add(m.Run, scored(3, 2, events.VerdictOK(), m.Run), events.OwnerGrader)
		}
		return l.report()
	}
	for _, settle := range []bool{false, true} {
		byScore, byVerdict := build(true, settle), build(false, settle)
		s, v := byScore.Treatments[0], byVerdict.Treatments[0]
		if byScore.Complete != byVerdict.Complete || byScore.Complete != settle {
			t.Fatalf("settled %v: complete %v under a score conflict, %v under a verdict conflict", settle, byScore.Complete, byVerdict.Complete)
		}
		if s.Disputed != v.Disputed || s.Graded != v.Graded || s.Passed != v.Passed || s.Failed != v.Failed ||
			s.Pending != v.Pending || s.Conflicted != v.Conflicted || s.Conflicted != 1 {
			t.Fatalf("settled %v: a score conflict counts %+v, a verdict conflict %+v", settle, s, v)
		}
		if len(s.Scores) != 1 || len(v.Scores) != 1 || s.Scores[0].Values != v.Scores[0].Values {
			t.Fatalf("settled %v: scorer values %+v under a score conflict, %+v under a verdict conflict", settle, s.Scores, v.Scores)
		}
		if settle {
			if s.Disputed != 0 || s.Passed != 4 || s.Scores[0].Values != 4 {
				t.Fatalf("the settling revision did not count: %+v", s)
			}
			continue
		}
		if s.Disputed != 1 || s.Graded != 3 || s.Scores[0].Values != 3 {
			t.Fatalf("the score-disputed attempt is counted: %+v, %+v", s, s.Scores)
		}
		row := byScore.Attempts[0]
		if row.Outcome != OutcomeDisputed || !strings.Contains(row.Reason, "grade.conflict") || !strings.Contains(row.Reason, "score quality = 2") {
			t.Fatalf("the attempt does not say it is disputed by its score: %+v", row)
		}
	}
}
