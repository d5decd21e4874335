package pages_test

import (
	"testing"

	"github.com/factline/factline/events"
)

// A turn whose reply kept its text and a call's arguments in blobs (too
// large for a fact) shows the blobs to open, not an empty reply and a
// call without arguments.
func TestATurnShowsTheBlobsOfALargeReply(t *testing.T) {
	s := newScenario(t)
	const suite, run = "s", "r"
	text, args := events.DigestOf([]byte("a long text")), events.DigestOf([]byte(`{"content":"a lot"}`))
	s.add(suite, run, 1, events.OwnerMeter, events.RunRequested{Case: "c", CaseDigest: digest, Treatment: "t", TreatmentDigest: digest, Trial: 1})
	s.add(suite, run, 1, events.OwnerRunner, events.RunClaimed{Runner: "r1", Lease: 1})
	s.add(suite, run, 1, events.OwnerRunner, events.TurnStarted{Turn: 1, ContextDigest: digest, Messages: 2})
	s.add(suite, run, 1, events.OwnerRunner, events.ModelReplied{Turn: 1, Provider: "openai", TextDigest: text,
		Calls: []events.ToolCall{{ID: "w", Name: "write_file", ArgsDigest: args}}})
	p, ok := s.m.Run(suite, run)
	if !ok || len(p.Turns) != 1 || len(p.Turns[0].Calls) != 1 {
		t.Fatalf("page %v: %+v", ok, p.Turns)
	}
	if tu := p.Turns[0]; tu.ReplyBlob != text || tu.Calls[0].ArgsBlob != args || tu.Calls[0].Args != "" {
		t.Fatalf("turn: reply blob %q, call %+v", tu.ReplyBlob, tu.Calls[0])
	}
}
