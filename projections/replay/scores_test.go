package replay_test

import (
	"bytes"
	"reflect"
	"testing"

	"github.com/factline/factline/bus"
	"github.com/factline/factline/bus/bustest"
	"github.com/factline/factline/events"
	"github.com/factline/factline/projections"
	"github.com/factline/factline/projections/replay"
)

// gradedWithScores appends a run graded twice with scores: a JUnit
// instrument's tally and test cases, a judge's rating and reasons, two
// verdict revisions whose scores disagree, and the score-only conflict
// between them. It returns the scores each revision carried.
func gradedWithScores(t *testing.T, b *bus.Bus) [][]events.Score {
	ctx := ctxT(t)
	snap := events.DigestOf([]byte("candidate"))
	f64 := func(v float64) *float64 { return &v }
	junit := events.InstrumentResult{Instrument: "tests", Version: "1", Required: true, Outcome: events.InstrumentFailed,
		Score: &events.InstrumentScore{Source: events.ScoreJUnit, Values: []events.ScoreValue{{Name: "score", Value: 0.94}},
			Tests: &events.TestTally{Passed: 47, Failed: 3, Cases: []events.TestCase{
				{Suite: "calc", Name: "TestDiv", Outcome: events.TestFailed, Message: "want 2, got 3"}}, Unlisted: 49}}}
	judge := events.InstrumentResult{Instrument: "rate", Version: "1", Outcome: events.InstrumentPassed,
		Score: &events.InstrumentScore{Source: events.ScoreJudge, Values: []events.ScoreValue{{Name: "score", Value: 4}},
			Reasons: "Right, but NOTES.md is terse."}}
	revs := [][]events.Score{
		{{Scorer: "correctness", Instrument: "tests", Key: "score", Min: 0, Max: 1, PassAt: f64(0.9), Raw: f64(0.94), Value: f64(0.94)},
			{Scorer: "quality", Instrument: "rate", Key: "score", Min: 1, Max: 5, Raw: f64(4), Value: f64(0.75)},
			{Scorer: "latency", Instrument: "bench", Key: "p50_ms", Min: 0, Max: 1000, LowerIsBetter: true, Missing: "instrument bench did not run"}},
		{{Scorer: "correctness", Instrument: "tests", Key: "score", Min: 0, Max: 1, PassAt: f64(0.9), Raw: f64(0.96), Value: f64(0.96)},
			{Scorer: "quality", Instrument: "rate", Key: "score", Min: 1, Max: 5, Raw: f64(2), Value: f64(0.25)},
			{Scorer: "latency", Instrument: "bench", Key: "p50_ms", Min: 0, Max: 1000, LowerIsBetter: true, Missing: "instrument bench did not run"}},
	}
	bodies := []events.Body{
		events.CandidateSealed{SnapshotDigest: snap},
		events.GradeInstrument{SnapshotDigest: snap, Result: junit},
		events.GradeInstrument{SnapshotDigest: snap, Result: judge},
		events.GradeVerdict{Verdict: events.GraderVerdict{AttemptID: "runa", SnapshotID: snap, Revision: 1, Result: events.VerdictOK(),
			Instruments: []events.InstrumentResult{junit, judge}, Scores: revs[0]}},
		events.GradeVerdict{Verdict: events.GraderVerdict{AttemptID: "runa", SnapshotID: snap, Revision: 2, Result: events.VerdictOK(),
			Instruments: []events.InstrumentResult{junit, judge}, Scores: revs[1]}},
		events.GradeConflict{SnapshotDigest: snap, Revision: 2, ConflictsWith: 1, Instrument: "rate",
			Reason: "score quality = 2 where revision 1 scored 4"},
	}
	var expect bus.Expect
	for i, body := range bodies {
		owner := events.OwnerGrader
		if _, ok := body.(events.CandidateSealed); ok {
			owner = events.OwnerRunner
		}
		f, err := events.NewFact(events.Meta{Suite: "s1", Run: "runa", TaskGeneration: 1, Position: uint64(i + 1),
			Producer: events.Producer{Service: owner, Instance: "t"}}, body)
		if err != nil {
			t.Fatalf("fact %d: %v", i, err)
		}
		recs, err := b.Append(ctx, expect, bus.Pending{Fact: f})
		if err != nil {
			t.Fatalf("append %d: %v", i, err)
		}
		expect = expect.Then(recs[0].Seq)
	}
	return revs
}

// Scores survive export, import and replay unchanged: the grades
// projection rebuilt from the export file and from a server the export was
// imported into shows every revision's scores (raw, mapped, scale,
// direction, threshold, why one is missing), the instruments' tallies,
// test cases and reasons, and the score-only conflict, exactly as the log
// it came from does.
func TestScoresSurviveExportImportAndReplay(t *testing.T) {
	ctx := ctxT(t)
	src, _ := bustest.Start(t)
	revs := gradedWithScores(t, src)
	var buf bytes.Buffer
	if n, err := src.Export(ctx, &buf, bus.ReadOptions{}); err != nil || n.Messages != 6 || len(n.Flagged) != 0 {
		t.Fatalf("export wrote %+v, %v", n, err)
	}
	exported := buf.Bytes()
	dst, _ := bustest.Start(t)
	if n, err := dst.Import(ctx, bytes.NewReader(exported)); err != nil || n.Messages != 6 || len(n.Flagged) != 0 {
		t.Fatalf("import stored %+v, %v", n, err)
	}
	sources := map[string]replay.Source{
		"the log":      replay.Stream(src, bus.ReadOptions{}),
		"the export":   replay.Reader(bytes.NewReader(exported)),
		"the imported": replay.Stream(dst, bus.ReadOptions{}),
	}
	var want []byte
	for _, name := range []string{"the log", "the export", "the imported"} {
		in := projections.GradesFold.Start()
		res, err := replay.Run(ctx, sources[name], in, nil)
		if err != nil || res.Applied != 6 || len(res.Bad) != 0 {
			t.Fatalf("%s: applied %d (%d bad), %v", name, res.Applied, len(res.Bad), err)
		}
		grades, _ := projections.GradesFold.State(in)
		g := grades["s1/runa"]
		if g == nil || len(g.Revisions) != 2 || len(g.Instruments) != 2 || len(g.Conflicts) != 1 {
			t.Fatalf("%s: grade record %+v", name, g)
		}
		for i, r := range g.Revisions {
			if !reflect.DeepEqual(r.Scores, revs[i]) {
				t.Fatalf("%s: revision %d's scores\n%+v\nwant\n%+v", name, r.Revision, r.Scores, revs[i])
			}
		}
		if s := g.Instruments[0].Score; s == nil || s.Tests == nil || s.Tests.Passed != 47 || s.Tests.Unlisted != 49 ||
			len(s.Tests.Cases) != 1 || s.Tests.Cases[0].Message != "want 2, got 3" {
			t.Fatalf("%s: the JUnit tally %+v", name, s)
		}
		if s := g.Instruments[1].Score; s == nil || s.Reasons != "Right, but NOTES.md is terse." || s.Values[0].Value != 4 {
			t.Fatalf("%s: the judge's rating %+v", name, s)
		}
		if c := g.Conflicts[0]; c.Instrument != "rate" || c.Reason != "score quality = 2 where revision 1 scored 4" {
			t.Fatalf("%s: the score conflict %+v", name, c)
		}
		got := viewJSON(t, in)
		if want == nil {
			want = got
		} else if !bytes.Equal(got, want) {
			t.Fatalf("%s replays to another view than the log:\n%s\n%s", name, got, want)
		}
	}
}
