package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/factline/factline/bus"
	"github.com/factline/factline/events"
	"github.com/factline/factline/services/meter/measure"
	"github.com/factline/factline/suites"
)

// forgedStore leaves a store with a submitted suite "f" of one run that
// ended and failed its grade, and then a passing grade.verdict of that run
// forged on the run's run.ended subject (what a runner identity may
// publish on). It returns the store, the run and the forgery's sequence.
func forgedStore(t *testing.T) (store, run string, seq uint64) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	store = t.TempDir()
	b, done := openStoreBus(ctx, t, store)
	defer done()
	dir := t.TempDir()
	for name, content := range map[string]string{
		"suite.yaml": "name: f\ncases: [{path: a.yaml}]\ntreatments: [{path: t1.yaml}]\ntrials: 1\n",
		"a.yaml":     "id: a\ninstruction: x\ngrading:\n  instruments: [{id: tests, kind: command, command: 'true'}]\n",
		"t1.yaml":    "id: t1\nmodel: {provider: openai, name: m1}\n",
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	s, err := suites.Load(filepath.Join(dir, "suite.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	p, err := suites.Publish(ctx, b.Blobs(), s)
	if err != nil {
		t.Fatal(err)
	}
	if err := suites.Submit(ctx, b, p, "test"); err != nil {
		t.Fatal(err)
	}
	run = measure.Roster(p.Submitted)[0].Run
	snap := events.DigestOf([]byte(run))
	verdict := func(rev uint32, res events.VerdictResult) events.GradeVerdict {
		return events.GradeVerdict{Verdict: events.GraderVerdict{AttemptID: run, SnapshotID: snap, Revision: rev,
			Instruments: []events.InstrumentResult{{Instrument: "tests", Version: "1", Required: true, Outcome: events.InstrumentFailed}},
			Result:      res}}
	}
	expect := bus.Expect{}
	for i, body := range []events.Body{events.RunClaimed{Runner: "r", Lease: 1}, events.CandidateSealed{SnapshotDigest: snap},
		events.RunEnded{Status: events.RunDone, Reason: "r", Steps: 1}, verdict(1, events.VerdictFail())} {
		f, err := events.NewFact(events.Meta{Suite: "f", Run: run, TaskGeneration: 1, Position: uint64(i + 1),
			Producer: events.Producer{Service: body.Kind().Owner(), Instance: "test"}}, body)
		if err != nil {
			t.Fatal(err)
		}
		recs, err := b.Append(ctx, expect, bus.Pending{Fact: f})
		if err != nil {
			t.Fatal(err)
		}
		expect = expect.Then(recs[0].Seq)
	}
	forged, err := events.NewFact(events.Meta{Suite: "f", Run: run, TaskGeneration: 1, Position: 5,
		Producer: events.Producer{Service: events.OwnerGrader, Instance: "grader-1"}}, verdict(2, events.VerdictOK()))
	if err != nil {
		t.Fatal(err)
	}
	data, _ := events.Encode(forged)
	ack, err := b.JetStream().Publish(ctx, "fact.f."+run+".run.ended", data)
	if err != nil {
		t.Fatal(err)
	}
	return store, run, ack.Sequence
}

// Every reader of the log refuses a fact forged on another kind's subject
// and says so: the report leaves it out with a warning naming it, the
// audit names it as a fact-subject violation and fails, tail flags its
// line, replay folds it into nothing, and export and import carry it but
// flag it.
func TestReadersRefuseAndFlagAForgedFact(t *testing.T) {
	t.Parallel()
	store, run, seq := forgedStore(t)
	mark := fmt.Sprintf("message %d", seq)

	code, out, errOut := runCLI(t, "report", "f", "--store", store, "--json")
	var r measure.Report
	if code != 0 || json.Unmarshal([]byte(out), &r) != nil {
		t.Fatalf("report --json: %d %s %s", code, out, errOut)
	}
	if len(r.Treatments) != 1 || r.Treatments[0].Passed != 0 || r.Treatments[0].Failed != 1 {
		t.Fatalf("the report counts the forged pass: %+v", r.Treatments)
	}
	code, out, errOut = runCLI(t, "report", "f", "--store", store)
	if code != 0 || !strings.Contains(out, "warning: "+mark) || !strings.Contains(out, "does not match its subject") {
		t.Fatalf("report does not warn of the forgery: %d\n%s%s", code, out, errOut)
	}

	code, out, _ = runCLI(t, "audit", "--suite", "f", "--store", store)
	if code != 1 || !strings.Contains(out, "f/"+run+": fact-subject: "+mark) {
		t.Fatalf("audit: %d\n%s", code, out)
	}

	code, out, errOut = runCLI(t, "tail", "--since", "start", "--no-follow", "--store", store)
	var flagged string
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), fmt.Sprint(seq)+" ") {
			flagged = line
		}
	}
	if code != 0 || !strings.Contains(flagged, "NOT A FACT OF ITS SUBJECT") || !strings.Contains(flagged, `kind is "grade.verdict"`) {
		t.Fatalf("tail does not flag the forgery: %d\n%s%s", code, out, errOut)
	}
	_, out, _ = runCLI(t, "tail", "--since", "start", "--no-follow", "--json", "--store", store)
	if !strings.Contains(out, `"refused":"fact f/`+run+`/grade.verdict does not match its subject`) {
		t.Fatalf("tail --json does not flag the forgery:\n%s", out)
	}

	code, out, _ = runCLI(t, "replay", "kinds", "--store", store, "--json")
	var counts map[string]int
	if code != 0 || json.Unmarshal([]byte(out), &counts) != nil || counts["grade.verdict"] != 1 || counts["run.ended"] != 1 {
		t.Fatalf("replay kinds: %d %s", code, out)
	}

	export := filepath.Join(t.TempDir(), "f.flx")
	code, out, errOut = runCLI(t, "export", "--store", store, "--out", export)
	if code != 0 || !strings.Contains(out, "exported 6 messages") || !strings.Contains(out, "flagged "+mark) {
		t.Fatalf("export: %d\n%s%s", code, out, errOut)
	}
	code, out, errOut = runCLI(t, "import", "--store", t.TempDir(), export)
	if code != 0 || !strings.Contains(out, "imported 6 messages") || !strings.Contains(out, "flagged "+mark) {
		t.Fatalf("import: %d\n%s%s", code, out, errOut)
	}
	// The copy's audit names it as the store's does.
	code, out, errOut = runCLI(t, "audit", "--suite", "f", "--file", export)
	if code != 1 || !strings.Contains(out, "f/"+run+": fact-subject: "+mark) {
		t.Fatalf("audit --file: %d\n%s%s", code, out, errOut)
	}
}
