package bench

import (
	"errors"
	"math"
	"path/filepath"
	"testing"
	"time"

	"github.com/factline/factline/bus"
	"github.com/factline/factline/events"
)

// storedStamp is the server's timestamp of the newest message on subject,
// read by the stream's own message get: a path of its own, so that the test
// does not check the benchmark's timing against itself.
func storedStamp(t *testing.T, s *server, subject string) time.Time {
	t.Helper()
	st, err := s.b.JetStream().Stream(testCtx(t), bus.FactsStream)
	if err != nil {
		t.Fatal(err)
	}
	m, err := st.GetLastMsgForSubject(testCtx(t), subject)
	if err != nil {
		t.Fatalf("last message on %s: %v", subject, err)
	}
	return m.Time
}

// B7 at one run is timed from the suite's own facts: its turns/s agree
// within 5% with the turns over the time the server stored between the
// suite's submission and its report. (It under-reported by up to a second
// a suite when it timed itself by the wall clock around a wait that fell
// back to a one-second poll: 9.4 turns/s seen against 164 stored.)
func TestB7AtOneRunAgreesWithTheStoredTimestamps(t *testing.T) {
	ctx := testCtx(t)
	dir := t.TempDir()
	s, err := startServer(ctx, filepath.Join(dir, "store"), bus.SyncAlways, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.close()
	stop, err := startServices(ctx, s.b, 1, 1, filepath.Join(dir, "work"), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	const turns = 10
	for i, name := range []string{"b7-one-a", "b7-one-b", "b7-one-c"} {
		rate, err := benchSweep(ctx, s, dir, name, sweepPoint{Runs: 1, Instances: 1}, turns, Config{})
		if err != nil {
			t.Fatal(err)
		}
		from := storedStamp(t, s, "fact."+name+"."+events.SuiteScope+"."+string(events.KindSuiteSubmitted))
		to := storedStamp(t, s, "fact."+name+"."+events.SuiteScope+"."+string(events.KindSuiteReported))
		stored := turns / to.Sub(from).Seconds()
		if off := math.Abs(rate-stored) / stored; off > 0.05 {
			t.Errorf("suite %d: B7 measured %.1f turns/s, the stored timestamps give %.1f (%.0f%% off, at most 5%%)", i, rate, stored, 100*off)
		}
	}
}

// stampedAt is a fact of the given body stored ms milliseconds after t0.
func stampedAt(body events.Body, ms int) stamped {
	return stamped{f: events.Fact{Body: body}, at: t0.Add(time.Duration(ms) * time.Millisecond)}
}

var t0 = time.Date(2026, 12, 2, 2, 0, 0, 0, time.UTC)

// A suite runs from its submission being stored to its report being
// stored; facts in between (and after) do not move either end.
func TestSuiteSpanRunsFromSubmissionToReport(t *testing.T) {
	d, err := suiteSpan([]stamped{
		stampedAt(events.SuiteSubmitted{}, 0),
		stampedAt(events.RunRequested{}, 3),
		stampedAt(events.TurnStarted{}, 5),
		stampedAt(events.SuiteReported{}, 61),
		stampedAt(events.TurnStarted{}, 900),
	})
	if err != nil || d != 61*time.Millisecond {
		t.Fatalf("span = %v, %v; want 61ms", d, err)
	}
}

// The start is the earliest of suite.submitted and run.requested, in
// whatever order the reads handed them over.
func TestSuiteSpanStartsAtTheFirstRunRequestedWhenItIsEarlier(t *testing.T) {
	d, err := suiteSpan([]stamped{
		stampedAt(events.SuiteSubmitted{}, 10),
		stampedAt(events.SuiteReported{}, 100),
		stampedAt(events.RunRequested{}, 4),
		stampedAt(events.RunRequested{}, 2),
	})
	if err != nil || d != 98*time.Millisecond {
		t.Fatalf("span = %v, %v; want 98ms", d, err)
	}
}

// A suite without its report, or without a start, is not timed.
func TestSuiteSpanNeedsBothEnds(t *testing.T) {
	for name, facts := range map[string][]stamped{
		"no report": {stampedAt(events.SuiteSubmitted{}, 0), stampedAt(events.RunRequested{}, 1)},
		"no start":  {stampedAt(events.TurnStarted{}, 0), stampedAt(events.SuiteReported{}, 5)},
		"none":      nil,
		"backwards": {stampedAt(events.SuiteReported{}, 0), stampedAt(events.SuiteSubmitted{}, 5)},
	} {
		if _, err := suiteSpan(facts); !errors.Is(err, errNotTimed) {
			t.Errorf("%s: err = %v, want errNotTimed", name, err)
		}
	}
}
