package grader_test

import (
	"fmt"
	"testing"

	"github.com/factline/factline/events"
	"github.com/factline/factline/services/grader"
)

// A run graded once it has ended leaves no log in the grader's run cache:
// the grader reads it again only to regrade, which loads it anew, so a
// log kept for it would only wait for the cache to evict it, and the
// grader's memory would follow the runs ended (up to its run cache's
// size, 1,024 a process) rather than the runs in flight. A run graded
// before its end keeps its log: its run.ended brings the grader back.
func TestAnEndedRunGradedLeavesNoLog(t *testing.T) {
	const ended = 5
	e := start(t)
	req := e.publish("")
	g := e.grader()
	e.append("going", req, events.CandidateSealed{SnapshotDigest: e.store(fixtureFiles), Files: uint32(len(fixtureFiles))})
	must(t, g.Grade(e.ctx, suite, "going"))
	for r := range ended {
		run := fmt.Sprint("run-", r)
		e.attempt(run, req, fixtureFiles)
		must(t, g.Grade(e.ctx, suite, run))
		if v := e.verdict(run); v.Result.Type() == "" {
			t.Fatalf("%s: verdict %+v", run, v)
		}
	}
	if n := grader.RunsKept(g); n != 1 {
		t.Errorf("the grader's run cache keeps %d runs' logs after %d ended runs were graded and one still going, want 1 (the one going)", n, ended)
	}
}
