package projections_test

import (
	"errors"
	"testing"
	"time"

	"github.com/factline/factline/events"
	"github.com/factline/factline/projections"
)

func suiteFact(at int, b events.Body) events.Fact {
	return events.Fact{Suite: "s", Run: events.SuiteScope, At: time.Unix(int64(at), 0).UTC(), Body: b}
}

func submitted() events.Fact {
	return suiteFact(0, events.SuiteSubmitted{Name: "s"})
}

func controlled(at int, a events.SuiteAction, reason string) events.Fact {
	return suiteFact(at, events.SuiteControlled{ID: string(a), Action: a, From: "ops", Reason: reason})
}

func fold(facts ...events.Fact) projections.SuiteControl {
	return projections.FoldSuiteControl("s", facts)
}

func TestAControlOfASuiteNeverSubmittedIsRefusedNamingIt(t *testing.T) {
	err := fold().Accept(events.SuitePause)
	if !errors.Is(err, projections.ErrSuiteUnknown) {
		t.Fatalf("got %v, want ErrSuiteUnknown", err)
	}
	var ce *projections.ControlError
	if !errors.As(err, &ce) || ce.Suite != "s" {
		t.Fatalf("the error does not name the suite: %v", err)
	}
}

func TestAControlAfterTheReportIsRefused(t *testing.T) {
	c := fold(submitted(), suiteFact(5, events.SuiteReported{}))
	for _, a := range events.SuiteActions() {
		if err := c.Accept(a); !errors.Is(err, projections.ErrSuiteReported) {
			t.Errorf("%s after the report: got %v, want ErrSuiteReported", a, err)
		}
	}
}

func TestResumeNeedsAPause(t *testing.T) {
	if err := fold(submitted()).Accept(events.SuiteResume); !errors.Is(err, projections.ErrSuiteState) {
		t.Fatalf("resume of an active suite: got %v", err)
	}
	if err := fold(submitted(), controlled(1, events.SuitePause, "")).Accept(events.SuiteResume); err != nil {
		t.Fatalf("resume of a paused suite refused: %v", err)
	}
}

func TestACancelledSuiteTakesNoFurtherControl(t *testing.T) {
	c := fold(submitted(), controlled(1, events.SuiteCancel, "x"))
	for _, a := range events.SuiteActions() {
		if err := c.Accept(a); !errors.Is(err, projections.ErrSuiteState) {
			t.Errorf("%s after cancel: got %v", a, err)
		}
	}
}

func TestADrainedSuiteMayOnlyBeCancelled(t *testing.T) {
	c := fold(submitted(), controlled(1, events.SuiteDrain, ""))
	for _, a := range events.SuiteActions() {
		err := c.Accept(a)
		if (a == events.SuiteCancel) != (err == nil) {
			t.Errorf("%s after drain: got %v", a, err)
		}
	}
}

func TestAPausedSuiteHoldsRunsBeforeTheyStartAndAtBoundaries(t *testing.T) {
	c := fold(submitted(), controlled(1, events.SuitePause, "lunch"))
	if g := c.BeforeStart(); g.Verdict != projections.Hold {
		t.Errorf("before start: %+v", g)
	}
	if g := c.AtBoundary(); g.Verdict != projections.Hold {
		t.Errorf("at a boundary: %+v", g)
	}
	if c.MayRequest() {
		t.Error("a paused suite may request more runs")
	}
}

func TestAResumedSuiteGoesOn(t *testing.T) {
	c := fold(submitted(), controlled(1, events.SuitePause, ""), controlled(2, events.SuiteResume, ""))
	if c.State != projections.SuiteActive || c.BeforeStart().Verdict != projections.Proceed ||
		c.AtBoundary().Verdict != projections.Proceed || !c.MayRequest() {
		t.Fatalf("resumed: %+v", c)
	}
}

func TestADrainedSuiteStartsNothingAndLetsRunningRunsFinish(t *testing.T) {
	c := fold(submitted(), controlled(1, events.SuiteDrain, ""))
	if g := c.BeforeStart(); g.Verdict != projections.Stop || g.Reason != events.ReasonSuiteDrained {
		t.Errorf("before start: %+v", g)
	}
	if g := c.AtBoundary(); g.Verdict != projections.Proceed {
		t.Errorf("at a boundary: %+v", g)
	}
	if c.MayRequest() || !c.Ends() {
		t.Error("a drained suite requests more runs")
	}
}

func TestACancelledSuiteEndsRunningRunsWithTheReason(t *testing.T) {
	c := fold(submitted(), controlled(1, events.SuitePause, ""), controlled(2, events.SuiteCancel, "wrong model"))
	if g := c.BeforeStart(); g.Verdict != projections.Stop || g.Reason != events.ReasonSuiteCancelled {
		t.Errorf("before start: %+v", g)
	}
	if g := c.AtBoundary(); g.Verdict != projections.Stop || g.Reason != "suite_cancelled: wrong model" {
		t.Errorf("at a boundary: %+v", g)
	}
}

func TestTheLastControlSaysWhoWhenAndWhy(t *testing.T) {
	c := fold(submitted(), controlled(7, events.SuiteDrain, "budget"))
	l := c.Last()
	if l == nil || l.From != "ops" || l.Reason != "budget" || !l.At.Equal(time.Unix(7, 0)) || !c.Has("drain") {
		t.Fatalf("last: %+v", l)
	}
}
