package view_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/factline/factline/bus"
	"github.com/factline/factline/bus/bustest"
	"github.com/factline/factline/events"
	"github.com/factline/factline/services/meter/measure"
)

// commitFact appends one fact to a run, as its owner would.
func commitFact(t *testing.T, ctx context.Context, b *bus.Bus, suite, run string, owner events.Owner, body events.Body) {
	t.Helper()
	_, err := b.Commit(ctx, nil, suite, run, func(log bus.RunLog) ([]bus.Pending, error) {
		gen := uint32(1)
		if run == events.SuiteScope {
			gen = 0
		}
		f, err := events.NewFact(events.Meta{Suite: suite, Run: run, TaskGeneration: gen, Position: log.NextPosition(),
			Producer: events.Producer{Service: owner, Instance: "test"}}, body)
		return []bus.Pending{{Fact: f}}, err
	})
	if err != nil {
		t.Fatal(err)
	}
}

// The suite page shows each scorer's mean with its interval, as the report
// has it, and plots it; a run's page shows its scores, its instrument's
// test cases and the judge's reasons.
func TestViewerShowsScoresAndTheJudgesReasons(t *testing.T) {
	ctx := testCtx(t)
	b, _ := bustest.Start(t)
	d := events.DigestOf([]byte("x"))
	sub := events.SuiteSubmitted{Name: "scored", SpecDigest: d, Trials: 1,
		Treatments: []events.Ref{{ID: "on", Digest: d}, {ID: "off", Digest: d}}}
	for c := range 3 {
		sub.Cases = append(sub.Cases, events.Ref{ID: fmt.Sprintf("c%d", c), Digest: d})
	}
	commitFact(t, ctx, b, "scored", events.SuiteScope, events.OwnerSubmitter, sub)
	var first string
	i := 0
	for m := range measure.Members(sub) {
		i++
		if first == "" {
			first = m.Run
		}
		raw := float64(1 + i%5)
		value := (raw - 1) / 4
		snap := events.DigestOf([]byte(m.Run))
		commitFact(t, ctx, b, "scored", m.Run, events.OwnerMeter, events.RunRequested{Case: m.Case, CaseDigest: d, Treatment: m.Treatment,
			TreatmentDigest: d, Trial: m.Trial, Components: []events.Component{{Name: "model", Value: m.Treatment}}})
		commitFact(t, ctx, b, "scored", m.Run, events.OwnerRunner, events.CandidateSealed{SnapshotDigest: snap, Files: 1})
		commitFact(t, ctx, b, "scored", m.Run, events.OwnerRunner, events.RunEnded{Status: events.RunDone, Reason: "done",
			Spent: events.Spent{Steps: 1, Millis: 1}})
		review := events.InstrumentResult{Instrument: "review", Version: "1", Outcome: events.InstrumentPassed, Detail: "SCORE",
			Score: &events.InstrumentScore{Source: events.ScoreJudge, Values: []events.ScoreValue{{Name: "score", Value: raw}},
				Reasons: "NOTES.md explains the fix but skips the empty input."}}
		commitFact(t, ctx, b, "scored", m.Run, events.OwnerGrader, events.GradeInstrument{SnapshotDigest: snap, Result: review})
		commitFact(t, ctx, b, "scored", m.Run, events.OwnerGrader, events.GradeVerdict{Verdict: events.GraderVerdict{AttemptID: m.Run,
			SnapshotID: snap, Revision: 1, Result: events.VerdictOK(), Instruments: []events.InstrumentResult{review},
			Scores: []events.Score{{Scorer: "quality", Instrument: "review", Key: "score", Min: 1, Max: 5, Raw: &raw, Value: &value}}}})
	}
	_, h := serveCaughtUp(t, ctx, b)
	code, page := get(t, h.URL+"/suites/scored")
	if code != 200 {
		t.Fatalf("suite page: %d", code)
	}
	for _, want := range []string{`id="scores"`, `data-scorer="quality"`, `data-field="mean"`, `id="score-plot"`, "mean score on [0, 1]", "score quality"} {
		if !strings.Contains(page, want) {
			t.Errorf("the suite page lacks %q", want)
		}
	}
	code, page = get(t, h.URL+"/suites/scored/runs/"+first)
	if code != 200 {
		t.Fatalf("run page: %d", code)
	}
	for _, want := range []string{`data-reasons`, "NOTES.md explains the fix but skips the empty input.", `id="scores-1"`,
		`data-scorer="quality"`, `data-value="0.25"`} {
		if !strings.Contains(page, want) {
			t.Errorf("the run page lacks %q", want)
		}
	}
}
