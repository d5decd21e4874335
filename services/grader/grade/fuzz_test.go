package grade

import (
	"testing"

	"github.com/factline/factline/events"
)

// validScore checks that what a reader made is a valid fact body, as the
// shell will append it.
func validScore(t *testing.T, s events.InstrumentScore) {
	t.Helper()
	err := events.ValidateBody(events.GradeInstrument{SnapshotDigest: snap, Result: events.InstrumentResult{
		Instrument: "tests", Version: "1", Outcome: events.InstrumentFailed, Score: &s}})
	if err != nil {
		t.Fatalf("%+v is not a valid fact: %v", s, err)
	}
	if v, ok := s.Value("score"); ok && (v < 0 || v > 1) && s.Source == events.ScoreJUnit {
		t.Fatalf("a pass fraction of %v", v)
	}
}

// FuzzReadJUnit: whatever a command writes as its report, the reader
// returns a valid score or says why there is none; it never panics.
func FuzzReadJUnit(f *testing.F) {
	f.Add([]byte(`<testsuite><testcase name="a"/><testcase name="b"><failure message="x"/></testcase></testsuite>`))
	f.Fuzz(func(t *testing.T, data []byte) {
		validScore(t, ReadJUnit(data))
	})
}

// FuzzReadScoreLine: whatever a command prints, the reader returns valid
// values in name order with "score" among them, or says why there are
// none.
func FuzzReadScoreLine(f *testing.F) {
	f.Add([]byte("{\"score\": 0.5, \"x\": 2}\n"))
	f.Fuzz(func(t *testing.T, out []byte) {
		s := ReadScoreLine(out)
		validScore(t, s)
		if s.Missing == "" {
			if _, ok := s.Value("score"); !ok {
				t.Fatalf("values without score: %+v", s)
			}
		}
	})
}

// FuzzReadJudgeScore: whatever a judge answers, its rating is on the
// scale or missing with a reason, and its reasons are bounded.
func FuzzReadJudgeScore(f *testing.F) {
	f.Add("Good.\nSCORE: 4\nVERDICT: PASS\n", 1.0, 5.0)
	f.Fuzz(func(t *testing.T, reply string, lo, hi float64) {
		if !(lo < hi) || lo != lo || hi != hi || lo < -1e300 || hi > 1e300 {
			return
		}
		s := ReadJudgeScore(reply, lo, hi)
		validScore(t, s)
		if v, ok := s.Value("score"); ok && (v < lo || v > hi) {
			t.Fatalf("rating %v off [%v, %v]", v, lo, hi)
		}
		if len(s.Reasons) > reasonsCap+len("…") {
			t.Fatalf("reasons of %d bytes", len(s.Reasons))
		}
	})
}
