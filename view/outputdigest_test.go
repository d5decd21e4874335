package view_test

import (
	"strings"
	"testing"

	"github.com/factline/factline/bus"
	"github.com/factline/factline/bus/bustest"
	"github.com/factline/factline/events"
)

// dispatch.completed's output_digest is written by nothing (a tool's
// output is always inline), so it names no blob the store holds, and
// events.BlobRefs does not list it: the run page shows the inline output
// and no link to /blobs/ for that digest, which would have been a 404.
// Before, a fact carrying one was rendered as "The full output is the
// blob …" with that link.
func TestTheRunPageLinksNoBlobForAnOutputDigest(t *testing.T) {
	ctx := testCtx(t)
	b, _ := bustest.Start(t)
	const suite, run = "s", "r1"
	out := events.DigestOf([]byte("the whole output, never stored"))
	x := events.DigestOf([]byte("x"))
	bodies := []events.Body{
		events.RunClaimed{Runner: "test-runner", Lease: 1},
		events.TurnStarted{Turn: 1, ContextDigest: x, Messages: 2},
		events.ModelReplied{Turn: 1, Provider: "scripted", Text: "reading",
			Calls: []events.ToolCall{{ID: "c1", Name: "read_file", Args: `{"path":"NOTES.md"}`, ArgsDigest: x}}},
		events.DispatchCompleted{Turn: 1, Output: "port 9090", OutputDigest: out, Dispatch: events.CompletedDispatch{CallID: "c1", EvidenceRef: "t1/c1",
			Disposition: events.DispositionExecuted, Mutation: events.MutationNotApplicable, Verification: events.Passed(1), Outcome: events.OutcomeApplied}},
	}
	var pending []bus.Pending
	for i, body := range bodies {
		f, err := events.NewFact(events.Meta{Suite: suite, Run: run, TaskGeneration: 1, Position: uint64(i + 1),
			Producer: events.Producer{Service: events.OwnerRunner, Instance: "test-runner"}}, body)
		if err != nil {
			t.Fatal(err)
		}
		pending = append(pending, bus.Pending{Fact: f})
	}
	if _, err := b.Append(ctx, bus.Expect{}, pending...); err != nil {
		t.Fatal(err)
	}
	_, h := serveCaughtUp(t, ctx, b)
	code, page := get(t, h.URL+"/suites/"+suite+"/runs/"+run)
	if code != 200 {
		t.Fatalf("run page: %d\n%s", code, page)
	}
	turn := turnHTML(t, page, "1")
	if !strings.Contains(turn, "port 9090") {
		t.Errorf("the call's inline output is not shown:\n%s", turn)
	}
	if strings.Contains(turn, out.Hex()) || strings.Contains(turn, "full output is the blob") {
		t.Errorf("the page links output_digest %s as a blob:\n%s", out, turn)
	}
}
