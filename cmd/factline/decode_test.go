package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/factline/factline/events"
)

// decode turns a stored message into the fact's wire map as JSON, refuses
// what is no fact, and with --subject refuses a fact of another subject.
func TestDecodePrintsAStoredFact(t *testing.T) {
	t.Parallel()
	f, err := events.NewFact(events.Meta{Suite: "s", Run: "r", TaskGeneration: 1, Position: 1,
		Producer: events.Producer{Service: events.OwnerRunner, Instance: "x"}}, events.RunClaimed{Runner: "x", Lease: 1})
	if err != nil {
		t.Fatal(err)
	}
	data, err := events.Encode(f)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	msg := filepath.Join(dir, "msg")
	if err := os.WriteFile(msg, data, 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := runCLI(t, "decode", msg)
	var wire map[string]any
	if code != 0 || json.Unmarshal([]byte(out), &wire) != nil || wire["kind"] != "run.claimed" || wire["run"] != "r" {
		t.Fatalf("decode: %d %q %q", code, out, errOut)
	}
	if code, _, errOut := runCLI(t, "decode", msg, "--subject", "fact.s.r.run.ended"); code != 1 || !strings.Contains(errOut, "refused") {
		t.Fatalf("decode on another subject: %d %q", code, errOut)
	}
	junk := filepath.Join(dir, "junk")
	if err := os.WriteFile(junk, []byte("hello"), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, _, errOut := runCLI(t, "decode", junk); code != 1 || !strings.Contains(errOut, "not a fact") {
		t.Fatalf("decode of junk: %d %q", code, errOut)
	}
}
