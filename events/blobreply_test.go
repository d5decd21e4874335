package events_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/factline/factline/events"
)

// Resolve reads back exactly the parts a reply keeps in blobs (never a
// call with no arguments), checks each against its digest, and leaves the
// fact it was given as it was.
func TestResolveReadsBackThePartsKeptInBlobs(t *testing.T) {
	text, args := "a long text", `{"content":"a lot"}`
	blobs := map[events.Digest]string{events.DigestOf([]byte(text)): text, events.DigestOf([]byte(args)): args}
	var asked []events.Digest
	get := func(d events.Digest) ([]byte, error) {
		asked = append(asked, d)
		s, ok := blobs[d]
		if !ok {
			return nil, errors.New("no such blob")
		}
		return []byte(s), nil
	}
	r := events.ModelReplied{Turn: 3, Provider: "p", TextDigest: events.DigestOf([]byte(text)), Calls: []events.ToolCall{
		{ID: "big", Name: "write_file", ArgsDigest: events.DigestOf([]byte(args))},
		{ID: "none", Name: "list_files", ArgsDigest: events.DigestOf(nil)},
		{ID: "small", Name: "read_file", Args: "{}", ArgsDigest: events.DigestOf([]byte("{}"))},
	}}
	if !r.InBlobs() || !r.TextInBlob() || !r.Calls[0].ArgsInBlob() || r.Calls[1].ArgsInBlob() || r.Calls[2].ArgsInBlob() {
		t.Fatalf("which parts are in blobs: %+v", r)
	}
	full, err := r.Resolve(get)
	if err != nil {
		t.Fatal(err)
	}
	if full.Text != text || full.Calls[0].Args != args || full.Calls[1].Args != "" || full.Calls[2].Args != "{}" || full.InBlobs() {
		t.Fatalf("resolved %+v", full)
	}
	if len(asked) != 2 {
		t.Errorf("asked for %d blobs, want the text's and one call's", len(asked))
	}
	if r.Calls[0].Args != "" {
		t.Error("Resolve changed the calls of the reply it was given")
	}
	// A blob that does not hold what the digest names is an error, not
	// a silently different history.
	bad := func(events.Digest) ([]byte, error) { return []byte("something else"), nil }
	if _, err := r.Resolve(bad); err == nil || !strings.Contains(err.Error(), "turn 3's text") {
		t.Fatalf("a wrong blob: %v", err)
	}
	if _, err := (events.ModelReplied{Turn: 1, Provider: "p", Text: "inline"}).Resolve(bad); err != nil {
		t.Fatalf("a reply with nothing in blobs asked for one: %v", err)
	}
}
