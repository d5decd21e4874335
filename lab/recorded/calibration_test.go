package recorded_test

import (
	"context"
	"testing"
	"time"

	"github.com/factline/factline/bus"
	"github.com/factline/factline/cases"
	"github.com/factline/factline/lab/recorded"
	"github.com/factline/factline/lab/whatif"
	"github.com/factline/factline/projections/replay"
)

// The calibration suite is recorded with the stall handler off, so its
// answer under any policy is known from how its cases were written: a
// plateau of k identical answers (or failures, or idle turns) followed by
// recovery, or none. Under the default thresholds, which stop on the fifth
// repeat (three to arm, two retries), only the plateaus of five or more
// are cut short; the three cases that never recover are stopped.
func TestTheCalibrationSuiteUnderTheDefaults(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	b := runSuite(t, ctx, "../../examples/calibration/suite.yaml")
	res, err := recorded.Load(ctx, replay.Stream(b, bus.ReadOptions{}), nil, recorded.FromBus(b))
	if err != nil {
		t.Fatal(err)
	}
	d := cases.DefaultStall
	defaults := whatif.Candidate{Name: "defaults", Stall: cases.StallPolicy{
		RepeatedFailure: &d.RepeatedFailure, RepeatedObservation: &d.RepeatedObservation, RepeatedError: &d.RepeatedError,
		IdleTurns: &d.IdleTurns, Alternation: &d.Alternation, FailingVerifications: &d.FailingVerifications, RepairBudget: &d.RepairBudget}}
	rep := whatif.Evaluate(res.Runs, []whatif.Candidate{defaults})
	if s := rep.Candidates[0]; s.Runs != 14 || s.Same != 14 {
		t.Fatalf("recorded: %+v, want 14 runs, none stopped by the recording's (disabled) staller", s)
	}
	want := map[string]struct {
		stop  uint32
		grade whatif.Recovery
	}{
		"poll-5":      {5, whatif.Passed},
		"poll-6":      {5, whatif.Passed},
		"poll-never":  {5, whatif.Failed},
		"fix-after-4": {4, whatif.Passed},
		"fix-never":   {4, whatif.Failed},
		"idle-never":  {5, whatif.Failed},
	}
	s := rep.Candidates[1]
	for _, o := range s.Outcomes {
		w, stopped := want[o.Case]
		switch {
		case stopped && (o.Change != whatif.Earlier || o.Stop != w.stop || o.Grade != w.grade):
			t.Errorf("%s: %s at %d graded %s, want earlier at %d graded %s", o.Case, o.Change, o.Stop, o.Grade, w.stop, w.grade)
		case !stopped && o.Change != whatif.Same:
			t.Errorf("%s: %s at turn %d (%s), want the same as recorded", o.Case, o.Change, o.Stop, o.Cause)
		}
	}
	if s.FalseStops != 3 || s.TrueStalls != 3 || s.Later != 0 {
		t.Fatalf("defaults: %d false stops, %d true stalls, %d later; want 3, 3, 0", s.FalseStops, s.TrueStalls, s.Later)
	}
}
