package whatif_test

import (
	"bytes"
	"encoding/xml"
	"strings"
	"testing"

	"github.com/factline/factline/cases"
	"github.com/factline/factline/events"
	"github.com/factline/factline/lab/whatif"
)

// strict stops at the second identical answer, with no repair.
var strict = whatif.Candidate{Name: "strict", Stall: cases.StallPolicy{RepeatedObservation: intp(2), RepairBudget: intp(0)}}

// A job that was stuck for a while and then finished: a stall-off
// recording shows it recovering, so a policy that stops it is a false stop,
// and it saves what the recording spent after its stop.
func TestStoppingARunThatRecoveredIsAFalseStop(t *testing.T) {
	r := record(t, "recovers", off)
	r.polls("waiting", "waiting", "waiting", "done")
	run := r.end(events.RunDone, events.VerdictOK())
	o := whatif.Replay(run, &strict.Stall)
	if o.Change != whatif.Earlier || o.Stop != 2 || !o.FalseStop() || o.Cause != "repeated_observation" {
		t.Fatalf("outcome %+v, want an earlier stop at turn 2 that is a false stop", o)
	}
	if s := o.Saved; s.Turns != 2 || s.InputTokens != 200 || s.OutputTokens != 20 || s.Cost != 6 || s.CostUnknown != 0 || s.Wall <= 0 {
		t.Fatalf("saved %+v, want turns 3 and 4: 2 turns, 200+20 tokens, cost 6, some wall time", s)
	}
}

// A job that never finished: stopping it earlier is a true stall.
func TestStoppingARunThatNeverRecoveredIsATrueStall(t *testing.T) {
	r := record(t, "stuck", off)
	r.polls("waiting", "waiting", "waiting", "waiting", "waiting")
	run := r.end(events.RunExhausted, events.VerdictFail())
	o := whatif.Replay(run, &strict.Stall)
	if o.Change != whatif.Earlier || o.Stop != 2 || o.FalseStop() || o.Grade != whatif.Failed || o.Saved.Turns != 3 {
		t.Fatalf("outcome %+v, want an earlier stop at turn 2 on a run that failed, saving 3 turns", o)
	}
}

// A policy that lets a run go on past the recorded stall stop cannot know
// what would have followed: it says so, and counts nothing as saved.
func TestGoingOnPastTheRecordedStopIsUnknown(t *testing.T) {
	r := record(t, "stopped", cases.DefaultStall)
	if n := r.polls("waiting", "waiting", "waiting", "waiting", "waiting", "waiting", "waiting", "waiting"); n != 5 {
		t.Fatalf("the recording's staller stopped at turn %d, want 5 (3 repeats, 2 retries)", n)
	}
	run := r.end(events.RunIncomplete, events.VerdictFail())
	patient := cases.StallPolicy{RepeatedObservation: intp(0), IdleTurns: intp(0)}
	o := whatif.Replay(run, &patient)
	if o.Change != whatif.Later || o.RecordedStop != 5 || o.Stop != 0 || o.Saved != (whatif.Saved{}) {
		t.Fatalf("outcome %+v, want later than the recorded stop at 5, nothing saved", o)
	}
}

// Replayed under its own policy, a recording is decided as it was: the
// replay is checked against the log before any candidate is trusted.
func TestTheRecordedPolicyReplaysTheRecording(t *testing.T) {
	var runs []whatif.Run
	r := record(t, "a", cases.DefaultStall)
	r.polls("waiting", "waiting", "waiting", "waiting", "waiting", "waiting")
	runs = append(runs, r.end(events.RunIncomplete, events.VerdictFail()))
	r = record(t, "b", cases.DefaultStall)
	r.polls("10%", "10%", "10%", "20%", "done")
	runs = append(runs, r.end(events.RunDone, events.VerdictOK()))
	rep := whatif.Evaluate(runs, nil)
	if len(rep.Candidates) != 1 || rep.Candidates[0].Candidate.Name != whatif.Recorded {
		t.Fatalf("candidates %+v, want only the recorded policy", rep.Candidates)
	}
	if s := rep.Candidates[0]; s.Same != 2 || s.Earlier != 0 || s.Later != 0 {
		t.Fatalf("recorded policy: %+v, want both runs decided the same", s)
	}
}

// The summary counts each kind of outcome per policy, and the text, JSON
// and SVG say it.
func TestTheReportCountsFalseStopsTrueStallsAndUnknowns(t *testing.T) {
	rec := record(t, "recovers", off)
	rec.polls("waiting", "waiting", "waiting", "done")
	stuck := record(t, "stuck", off)
	stuck.polls("waiting", "waiting", "waiting", "waiting")
	fine := record(t, "fine", off)
	fine.polls("10%", "20%", "done")
	runs := []whatif.Run{rec.end(events.RunDone, events.VerdictOK()), stuck.end(events.RunExhausted, events.VerdictFail()), fine.end(events.RunDone, events.VerdictOK())}
	rep := whatif.Evaluate(runs, []whatif.Candidate{strict})
	s := rep.Candidates[1]
	if s.Runs != 3 || s.Earlier != 2 || s.FalseStops != 1 || s.TrueStalls != 1 || s.Same != 1 || s.Saved.Turns != 4 {
		t.Fatalf("strict: %+v, want 2 earlier (1 false stop, 1 true stall), 1 same, 4 turns saved", s)
	}
	var text bytes.Buffer
	if err := rep.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"strict", "s/recovers stops at turn 2", "a false stop", "s/stuck stops at turn 2", "a true stall"} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("text lacks %q:\n%s", want, text.String())
		}
	}
	var svg bytes.Buffer
	if err := rep.WriteSVG(&svg); err != nil {
		t.Fatal(err)
	}
	if err := xml.Unmarshal(svg.Bytes(), new(struct{})); err != nil {
		t.Fatalf("the SVG is not well-formed XML: %v", err)
	}
	if strings.Count(svg.String(), "<circle") != 2 {
		t.Fatalf("want a point per policy (recorded, strict):\n%s", svg.String())
	}
}

// A recorded run's outcome carries its grade's scores beside its verdict:
// what a stop would have cut short is a score as well as a pass.
func TestAnOutcomeCarriesTheRecordedScores(t *testing.T) {
	r := record(t, "scored", off)
	r.polls("waiting", "waiting", "waiting", "done")
	raw, value := 4.0, 0.75
	run := r.end(events.RunDone, events.VerdictOK(), events.Score{Scorer: "quality", Instrument: "review", Key: "score", Min: 1, Max: 5, Raw: &raw, Value: &value})
	o := whatif.Replay(run, &strict.Stall)
	if !o.FalseStop() || len(o.Scores) != 1 || o.Scores[0].Scorer != "quality" || *o.Scores[0].Value != 0.75 {
		t.Fatalf("outcome %+v, want a false stop of a run scored 0.75 on quality", o)
	}
}
