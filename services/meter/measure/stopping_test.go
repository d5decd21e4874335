package measure

import (
	"fmt"
	"strings"
	"testing"

	"github.com/factline/factline/events"
)

// stoppingSuite grades n pairs of A and B in order, pair i as outcome(i).
func stoppingSuite(t *testing.T, n int, outcome func(i int) (a, b bool)) *suiteLog {
	var ids []string
	for i := range n {
		ids = append(ids, fmt.Sprintf("c%03d", i))
	}
	l := newSuite(t, submitted(ids, []string{"a", "b"}, 1))
	for i, c := range ids {
		pa, pb := outcome(i)
		for tr, passed := range map[string]bool{"a": pa, "b": pb} {
			res := events.VerdictFail()
			if passed {
				res = events.VerdictOK()
			}
			l.attempt(c, tr, 1, events.RunDone, u64(10), vr(res))
		}
	}
	return l
}

func (l *suiteLog) log() *Log {
	lg := NewLog("s")
	for _, f := range l.facts {
		lg.Apply(f)
	}
	return lg
}

var rule = Stopping{A: "a", B: "b", Confidence: 0.95, MinPairs: 10}

func TestASettledDifferenceStopsTheSuite(t *testing.T) {
	l := stoppingSuite(t, 30, func(int) (bool, bool) { return false, true })
	st, stop := StopDecision(l.log(), rule)
	if !stop || st.Reason != events.StopDifference || st.Comparison != "a vs b" || st.Pairs != 30 || st.Low <= 0 || st.High > 1000 || st.Confidence != 950 {
		t.Fatalf("decision %+v, stop %v; want a difference in favour of b after 30 pairs", st, stop)
	}
}

func TestTiesDoNotStopTheSuiteWithoutAMargin(t *testing.T) {
	l := stoppingSuite(t, 200, func(i int) (bool, bool) { return i%2 == 0, i%2 == 0 })
	if st, stop := StopDecision(l.log(), rule); stop {
		t.Fatalf("stopped on ties: %+v", st)
	}
	withMargin := rule
	withMargin.Margin = 0.25
	st, stop := StopDecision(l.log(), withMargin)
	if !stop || st.Reason != events.StopEquivalence || st.Low <= -250 || st.High >= 250 {
		t.Fatalf("with a margin of 0.25: %+v, stop %v; want equivalence", st, stop)
	}
}

func TestFewerPairsThanTheMinimumNeverStop(t *testing.T) {
	l := stoppingSuite(t, 9, func(int) (bool, bool) { return false, true })
	if st, stop := StopDecision(l.log(), rule); stop {
		t.Fatalf("stopped after 9 of at least 10 pairs: %+v", st)
	}
}

func TestAStoppedSuiteDoesNotStopAgainAndSaysSo(t *testing.T) {
	l := stoppingSuite(t, 30, func(int) (bool, bool) { return false, true })
	st, _ := StopDecision(l.log(), rule)
	l.add(events.SuiteScope, st, events.OwnerMeter)
	if _, stop := StopDecision(l.log(), rule); stop {
		t.Fatal("a stopped suite stopped again")
	}
	r := l.report()
	if r.StoppedEarly == nil || !strings.Contains(r.State(), "stopped early after 30 pairs: a vs b, the difference excludes zero") {
		t.Fatalf("state %q", r.State())
	}
}

// A run not run because its suite stopped is excluded, even from a suite
// that counts cancelled runs: it says nothing of the agent.
func TestARunNotRunBecauseTheSuiteStoppedIsExcluded(t *testing.T) {
	sub := submitted([]string{"c1"}, []string{"a"}, 1)
	sub.ValidOutcomes = []events.RunStatus{events.RunDone, events.RunCancelled}
	l := newSuite(t, sub)
	m := l.member("c1", "a", 1)
	l.add(m.Run, events.RunRequested{Case: "c1", CaseDigest: d("case:c1"), Treatment: "a", TreatmentDigest: d("treatment:a"), Trial: 1}, events.OwnerMeter)
	l.add(m.Run, events.RunClaimed{Runner: "r", Lease: 1}, events.OwnerRunner)
	l.add(m.Run, events.RunEnded{Status: events.RunCancelled, Reason: events.ReasonSuiteStopped, LastEvidence: []events.EvidenceRef{}}, events.OwnerRunner)
	r := l.report()
	if a := r.Attempts[0]; a.Outcome != OutcomeExcluded || !strings.Contains(a.Reason, "stopped early") || !r.Complete {
		t.Fatalf("attempt %+v, complete %v", a, r.Complete)
	}
}

// A stopping rule may name a scorer: the sequence then tracks the paired
// difference B − A of its values on [0, 1], not the pass rate, and the
// suite.stopped names it. Pairs without a value under both stay out.
func TestAStoppingRuleOnAScorerTracksItsValues(t *testing.T) {
	ids := make([]string, 40)
	for i := range ids {
		ids[i] = fmt.Sprintf("c%03d", i)
	}
	l := newSuite(t, submitted(ids, []string{"a", "b"}, 1))
	for i, c := range ids {
		// Both always pass: the pass rates never differ. The scores do.
		for tr, v := range map[string]float64{"a": 0.2, "b": 0.9} {
			raw, value := v, v
			sc := []events.Score{{Scorer: "quality", Instrument: "tests", Key: "score", Min: 0, Max: 1, Raw: &raw, Value: &value}}
			if i == 0 && tr == "a" {
				sc = []events.Score{{Scorer: "quality", Instrument: "tests", Key: "score", Min: 0, Max: 1, Missing: "no score"}}
			}
			m := l.member(c, tr, 1)
			l.add(m.Run, events.RunRequested{Case: c, CaseDigest: d("case:" + c), Treatment: tr, TreatmentDigest: d("treatment:" + tr),
				Trial: 1, Identity: d(tr)}, events.OwnerMeter)
			l.add(m.Run, events.CandidateSealed{SnapshotDigest: d(m.Run)}, events.OwnerRunner)
			l.add(m.Run, events.RunEnded{Status: events.RunDone, Reason: "done", Spent: events.Spent{Steps: 1, Millis: 1}}, events.OwnerRunner)
			l.add(m.Run, events.GradeVerdict{Verdict: events.GraderVerdict{AttemptID: m.Run, SnapshotID: d(m.Run), Revision: 1,
				Result: events.VerdictOK(), Scores: sc}}, events.OwnerGrader)
		}
	}
	if st, stop := StopDecision(l.log(), rule); stop {
		t.Fatalf("the pass rates are equal, yet the suite stopped: %+v", st)
	}
	onScore := rule
	onScore.Scorer = "quality"
	st, stop := StopDecision(l.log(), onScore)
	if !stop || st.Reason != events.StopDifference || st.Scorer != "quality" || st.Pairs != 39 || st.Low <= 0 || st.Low > 700 || st.High < 700 {
		t.Fatalf("on the scorer: %+v, stop %v; want a difference for b over 39 pairs, its interval about 0.7", st, stop)
	}
	if err := events.ValidateBody(st); err != nil {
		t.Fatal(err)
	}
}

// A report stopped on a scorer says so in its state.
func TestAReportStoppedOnAScorerSaysSo(t *testing.T) {
	r := Report{StoppedEarly: &events.SuiteStopped{Comparison: "a vs b", Reason: events.StopDifference, Pairs: 39,
		Confidence: 950, Low: 501, High: 777, Scorer: "quality"}}
	if s := r.State(); !strings.Contains(s, "a vs b on scorer quality") || !strings.Contains(s, "[+50.1, +77.7]") {
		t.Fatalf("state %q", s)
	}
}
