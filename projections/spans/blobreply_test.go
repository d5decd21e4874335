package spans_test

import (
	"testing"

	"github.com/factline/factline/events"
	"github.com/factline/factline/projections/spans"
)

// A reply whose text and a call's arguments were kept in blobs (too large
// for the fact) names them on its spans, with or without content; a reply
// with everything inline names no blob.
func TestSpansNameTheBlobsOfALargeReply(t *testing.T) {
	for _, content := range []bool{false, true} {
		l := newLog(t)
		l.requested("r1")
		l.turnStarted("r1", 1)
		big := events.ToolCall{ID: "c1", Name: "write_file", ArgsDigest: digest(`{"content":"a lot"}`)}
		l.runner("r1", events.ModelReplied{Turn: 1, Provider: "openai", Model: "gpt-4.1-mini", TextDigest: digest("a long text"),
			Calls: []events.ToolCall{big, call("c2", "read_file", `{}`)}})
		l.intended("r1", 1, "c1", "write_file", events.EffectWrite)
		l.completed("r1", 1, "c1", "write_file", "too large", events.DispositionRejected, "", nil)
		l.intended("r1", 1, "c2", "read_file", events.EffectRead)
		l.completed("r1", 1, "c2", "read_file", "ok", events.DispositionExecuted, "", nil)
		ss := byName(t, spans.Project(l.facts, spans.Options{Content: content}))
		if got := str(t, ss["chat gpt-4.1-mini"], "factline.model.text_blob"); got != string(digest("a long text")) {
			t.Fatalf("the model span names %q", got)
		}
		if got := str(t, ss["execute_tool write_file"], "factline.tool.args_blob"); got != string(big.ArgsDigest) {
			t.Fatalf("the write's span names %q", got)
		}
		if _, ok := ss["execute_tool read_file"].Attr("factline.tool.args_blob"); ok {
			t.Fatal("a call with its arguments inline names a blob")
		}
	}
}
