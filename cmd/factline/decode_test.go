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

// A message as factline stores it (envelope version 4) names no suite and
// run of its own: decode reads it with --subject, showing the subject's,
// and without --subject refuses it saying that it needs one, not that it
// is no fact.
func TestDecodeReadsAStoredVersion4FactWithItsSubject(t *testing.T) {
	t.Parallel()
	f, err := events.NewFact(events.Meta{Suite: "s", Run: "r", TaskGeneration: 1, Position: 1,
		Producer: events.Producer{Service: events.OwnerRunner, Instance: "x"}}, events.RunClaimed{Runner: "x", Lease: 1})
	if err != nil {
		t.Fatal(err)
	}
	data, err := events.EncodeStored(f)
	if err != nil {
		t.Fatal(err)
	}
	msg := filepath.Join(t.TempDir(), "msg")
	if err := os.WriteFile(msg, data, 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := runCLI(t, "decode", msg, "--subject", "fact.s.r.run.claimed")
	var wire map[string]any
	if code != 0 || json.Unmarshal([]byte(out), &wire) != nil || wire["kind"] != "run.claimed" || wire["suite"] != "s" || wire["run"] != "r" {
		t.Fatalf("decode --subject: %d %q %q", code, out, errOut)
	}
	code, _, errOut = runCLI(t, "decode", msg)
	if code != 1 || !strings.Contains(errOut, "--subject") || strings.Contains(errOut, "not a fact") {
		t.Fatalf("decode without its subject: %d %q", code, errOut)
	}
}
