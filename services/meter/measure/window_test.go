package measure

import (
	"testing"

	"github.com/factline/factline/events"
)

// counted folds the suite's facts into a Counter.
func (l *suiteLog) counted() *Counter {
	l.t.Helper()
	c := NewCounter("s")
	for i, f := range l.facts {
		var reads int
		if err := c.Apply(f, earlierIn(l.facts, i, &reads)); err != nil {
			l.t.Fatal(err)
		}
	}
	return c
}

// request commits the run.requested of roster member i alone.
func (l *suiteLog) request(i int) {
	m := Roster(l.sub)[i]
	l.add(m.Run, events.RunRequested{Case: m.Case, CaseDigest: d("case:" + m.Case), Treatment: m.Treatment,
		TreatmentDigest: d("treatment:" + m.Treatment), Trial: m.Trial, Identity: d(m.Treatment)}, events.OwnerMeter)
}

// A suite just submitted is requested up to its window, from its first
// attempt.
func TestANewSuiteRequestsItsWindow(t *testing.T) {
	l := newSuite(t, submitted([]string{"c1", "c2"}, []string{"A"}, 5))
	if from, to := l.counted().ToRequest(3); from != 0 || to != 3 {
		t.Fatalf("ToRequest(3) = [%d, %d), want [0, 3)", from, to)
	}
}

// The window never reaches past the roster.
func TestTheWindowEndsWithTheRoster(t *testing.T) {
	l := newSuite(t, submitted([]string{"c1", "c2"}, []string{"A"}, 2))
	if from, to := l.counted().ToRequest(100); from != 0 || to != 4 {
		t.Fatalf("ToRequest(100) = [%d, %d), want [0, 4)", from, to)
	}
}

// Requested attempts that have not ended fill the window: nothing more is
// requested until one ends.
func TestRunsNotEndedFillTheWindow(t *testing.T) {
	l := newSuite(t, submitted([]string{"c1", "c2"}, []string{"A"}, 5))
	for i := range 3 {
		l.request(i)
	}
	if from, to := l.counted().ToRequest(3); from != to {
		t.Fatalf("ToRequest(3) = [%d, %d) with 3 runs requested and none ended, want nothing", from, to)
	}
}

// Each run ended lets one more attempt be requested.
func TestEachRunEndedOpensTheWindowByOne(t *testing.T) {
	l := newSuite(t, submitted([]string{"c1", "c2"}, []string{"A"}, 5))
	l.attempt("c1", "A", 1, events.RunDone, u64(1), pass)
	l.attempt("c2", "A", 1, events.RunDone, u64(1), nil) // ended, not graded: ended is what counts
	l.request(2)
	if from, to := l.counted().ToRequest(3); from != 3 || to != 5 {
		t.Fatalf("ToRequest(3) = [%d, %d), want [3, 5)", from, to)
	}
}

// What is requested is read from the log, not from an order: the window
// starts at the first attempt the log holds no request of, and the
// attempts after it already requested are counted as such.
func TestTheWindowStartsAtTheFirstAttemptNotRequested(t *testing.T) {
	l := newSuite(t, submitted([]string{"c1", "c2"}, []string{"A"}, 5))
	l.request(0)
	l.request(1)
	l.request(3)
	c := l.counted()
	if from, _ := c.ToRequest(10); from != 2 {
		t.Fatalf("the window starts at %d, want 2", from)
	}
	if c.Requested() != 3 || !c.IsRequested(3) || c.IsRequested(2) || c.IsRequested(4) {
		t.Fatalf("requested %d; 2: %v, 3: %v, 4: %v", c.Requested(), c.IsRequested(2), c.IsRequested(3), c.IsRequested(4))
	}
}

// A retry's run is not a planned attempt's own: requesting it requests
// no attempt.
func TestARetryRequestsNoPlannedAttempt(t *testing.T) {
	l := newSuite(t, submitted([]string{"c1"}, []string{"A"}, 2))
	l.attempt("c1", "A", 1, events.RunErrored, nil, nil)
	m := l.member("c1", "A", 1)
	l.add(m.Run+"-r1", events.RunRequested{Case: "c1", CaseDigest: d("case:c1"), Treatment: "A", TreatmentDigest: d("treatment:A"),
		Trial: 1, Identity: d("A"), RetryOf: m.Run}, events.OwnerMeter)
	if c := l.counted(); c.Requested() != 1 || c.IsRequested(1) {
		t.Fatalf("requested %d (the second attempt: %v), want 1 (false)", c.Requested(), c.IsRequested(1))
	}
}

// Member names attempt i as the roster does.
func TestMemberIsTheRostersIth(t *testing.T) {
	sub := submitted([]string{"c1", "c2", "c1"}, []string{"A", "B"}, 3)
	l := newSuite(t, sub)
	c := l.counted()
	for i, m := range Roster(sub) {
		if got := c.Member(uint64(i)); got != m {
			t.Fatalf("Member(%d) = %+v, want %+v", i, got, m)
		}
	}
}
