package grader_test

import (
	"fmt"
	"testing"

	"github.com/factline/factline/events"
)

// A child run (run.delegated) is part of its parent's attempt, not an
// attempt of the suite: the grader grades only the parent, and a child's
// end is no harness problem (no dead letter for a run without
// run.requested), and no grade.
func TestAChildRunIsNotGraded(t *testing.T) {
	e := start(t)
	req := e.publish(fmt.Sprintf(testsInstrument, ""))
	e.append("p-d1-c", events.RunDelegated{Request: req, Parent: events.ParentRef{Run: "p", Turn: 1, CallID: "c", OperationID: "p/t1/c"}},
		events.RunEnded{Status: events.RunDone, Reason: "done"})
	must(t, e.grader().Grade(e.ctx, suite, "p-d1-c"))
	if n := len(e.load("p-d1-c").Records); n != 2 {
		t.Fatalf("the child got %d facts, want its own 2", n)
	}
}
