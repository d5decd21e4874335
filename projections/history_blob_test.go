package projections_test

import (
	"testing"

	"github.com/factline/factline/events"
	"github.com/factline/factline/projections"
)

// A reply whose text or call arguments were kept in blobs (too large for
// a fact) shows in the history as the blobs that hold them, never as an
// empty text or a call without arguments; a call with no arguments at all
// names no blob.
func TestHistoryNamesTheBlobsOfALargeReply(t *testing.T) {
	text, args := events.DigestOf([]byte("a long text")), events.DigestOf([]byte(`{"content":"a lot"}`))
	h := projections.HistoryFold.Init()
	for _, f := range []events.Fact{
		fact(t, "r", 1, events.OwnerRunner, events.TurnStarted{Turn: 1, ContextDigest: text}),
		fact(t, "r", 2, events.OwnerRunner, events.ModelReplied{Turn: 1, Provider: "p", TextDigest: text, Calls: []events.ToolCall{
			{ID: "big", Name: "write_file", ArgsDigest: args},
			{ID: "none", Name: "list_files", ArgsDigest: events.DigestOf(nil)},
			{ID: "small", Name: "read_file", Args: `{"path":"a"}`, ArgsDigest: events.DigestOf([]byte(`{"path":"a"}`))},
		}}),
	} {
		h = projections.HistoryFold.Apply(h, f)
	}
	x := h["s/r"][0]
	if x.Reply != "" || x.ReplyBlob != text {
		t.Fatalf("reply %q, blob %q: want the text's blob", x.Reply, x.ReplyBlob)
	}
	if c := x.Calls; len(c) != 3 || c[0].ArgsBlob != args || c[1].ArgsBlob != "" || c[2].ArgsBlob != "" || c[2].Args != `{"path":"a"}` {
		t.Fatalf("calls %+v", c)
	}
}
