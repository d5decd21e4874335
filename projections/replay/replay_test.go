package replay_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/factline/factline/bus"
	"github.com/factline/factline/bus/bustest"
	"github.com/factline/factline/events"
	"github.com/factline/factline/projections"
	"github.com/factline/factline/projections/replay"
)

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// fill writes a few runs' worth of facts, interleaved, including run ends.
func fill(t *testing.T, b *bus.Bus, runs, turns int) {
	ctx := ctxT(t)
	expect := map[string]bus.Expect{}
	for turn := 1; turn <= turns; turn++ {
		for r := range runs {
			run := "run" + string(rune('a'+r))
			recs, err := b.Append(ctx, expect[run], bus.Pending{Fact: bustest.Turn(t, "s1", run, uint64(turn), uint32(turn))})
			if err != nil {
				t.Fatal(err)
			}
			expect[run] = expect[run].Then(recs[0].Seq)
		}
	}
	for r := range runs {
		run := "run" + string(rune('a'+r))
		f, err := events.NewFact(events.Meta{Suite: "s1", Run: run, TaskGeneration: 1, Position: uint64(turns + 1),
			Producer: events.Producer{Service: events.OwnerRunner, Instance: "t"}},
			events.RunEnded{Status: events.RunIncomplete, Reason: "steps exhausted", Steps: uint32(turns), NextAction: "raise the step budget"})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := b.Append(ctx, expect[run], bus.Pending{Fact: f}); err != nil {
			t.Fatal(err)
		}
	}
}

func viewJSON(t *testing.T, in projections.Instance) []byte {
	t.Helper()
	out, err := json.Marshal(in.View())
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// Replaying the same stream twice gives identical state, and replaying an
// export of it gives the same state again.
func TestReplayIsDeterministicAcrossStreamAndFile(t *testing.T) {
	ctx := ctxT(t)
	b, _ := bustest.Start(t)
	fill(t, b, 4, 5)

	var views [][]byte
	for range 2 {
		in := projections.RunsFold.Start()
		res, err := replay.Run(ctx, replay.Stream(b, bus.ReadOptions{}), in, nil)
		if err != nil {
			t.Fatal(err)
		}
		if res.Applied != 24 || len(res.Bad) != 0 {
			t.Fatalf("applied %d facts (%d bad), want 24", res.Applied, len(res.Bad))
		}
		views = append(views, viewJSON(t, in))
	}
	if !bytes.Equal(views[0], views[1]) {
		t.Fatalf("two replays differ:\n%s\n%s", views[0], views[1])
	}

	path := filepath.Join(t.TempDir(), "facts.flx")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	n, err := b.Export(ctx, f, bus.ReadOptions{})
	f.Close()
	if err != nil || n.Messages != 24 || len(n.Flagged) != 0 {
		t.Fatalf("export wrote %+v, %v", n, err)
	}
	in := projections.RunsFold.Start()
	if _, err := replay.Run(ctx, replay.File(path), in, nil); err != nil {
		t.Fatal(err)
	}
	if got := viewJSON(t, in); !bytes.Equal(got, views[0]) {
		t.Fatalf("file replay differs from stream replay:\n%s\n%s", got, views[0])
	}

	runs, _ := projections.RunsFold.State(in)
	r := runs["s1/runb"]
	if r == nil || r.Status != events.RunIncomplete || r.Turns != 5 || r.NextAction != "raise the step budget" {
		t.Fatalf("runb summary: %+v", r)
	}
}

// An export imported into a fresh server replays to the same state, and the
// imported runs load by their links as fast as the originals.
func TestImportRoundTrip(t *testing.T) {
	ctx := ctxT(t)
	src, _ := bustest.Start(t)
	fill(t, src, 3, 4)
	var buf bytes.Buffer
	if _, err := src.Export(ctx, &buf, bus.ReadOptions{}); err != nil {
		t.Fatal(err)
	}
	exported := buf.Bytes()

	dst, _ := bustest.Start(t)
	n, err := dst.Import(ctx, bytes.NewReader(exported))
	if err != nil || n.Messages != 15 || len(n.Flagged) != 0 {
		t.Fatalf("import stored %+v, %v", n, err)
	}
	if _, err := dst.Import(ctx, bytes.NewReader(exported)); err == nil {
		t.Fatal("import into a non-empty stream was accepted")
	}
	a, b := projections.RunsFold.Start(), projections.RunsFold.Start()
	if _, err := replay.Run(ctx, replay.Stream(src, bus.ReadOptions{}), a, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := replay.Run(ctx, replay.Stream(dst, bus.ReadOptions{}), b, nil); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(viewJSON(t, a), viewJSON(t, b)) {
		t.Fatal("imported stream replays differently")
	}
	log, err := dst.LoadRun(ctx, "s1", "runa")
	if err != nil || len(log.Records) != 5 {
		t.Fatalf("imported run loads %d facts, %v", len(log.Records), err)
	}

	// A filtered export lands at other sequences: the run links must follow.
	buf.Reset()
	if _, err := src.Export(ctx, &buf, bus.ReadOptions{Filter: "fact.s1.runb.>"}); err != nil {
		t.Fatal(err)
	}
	one, _ := bustest.Start(t)
	if n, err := one.Import(ctx, &buf); err != nil || n.Messages != 5 {
		t.Fatalf("filtered import stored %+v, %v", n, err)
	}
	s, err := one.JetStream().Stream(ctx, bus.FactsStream)
	if err != nil {
		t.Fatal(err)
	}
	for seq, want := range map[uint64]string{1: "", 2: "1", 5: "4,1,1,1"} {
		m, err := s.GetMsg(ctx, seq)
		if err != nil {
			t.Fatal(err)
		}
		if got := m.Header.Get(bus.HeaderPrev); got != want {
			t.Fatalf("imported message %d links %q, want %q", seq, got, want)
		}
	}
}

// A message that is not a fact is reported with its sequence and skipped.
func TestReplayReportsBadMessages(t *testing.T) {
	ctx := ctxT(t)
	b, _ := bustest.Start(t)
	fill(t, b, 1, 2)
	if _, err := b.JetStream().PublishMsg(ctx, &nats.Msg{Subject: "fact.s1.runz.turn.completed", Data: []byte("garbage")}); err != nil {
		t.Fatal(err)
	}
	in := projections.KindsFold.Start()
	res, err := replay.Run(ctx, replay.Stream(b, bus.ReadOptions{}), in, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Applied != 3 || len(res.Bad) != 1 || res.Bad[0].Seq != 4 {
		t.Fatalf("result %+v", res)
	}
	counts, _ := projections.KindsFold.State(in)
	if counts[events.KindTurnCompleted] != 2 || counts[events.KindRunEnded] != 1 {
		t.Fatalf("counts %v", counts)
	}
}

// A fact stored under a subject that names another kind (a grade forged on
// a runner's run.ended subject) is no fact: replays from the stream, from
// an export and from an import of that export leave it out and report it
// as bad with the mismatch; export and import carry it unchanged, so the
// evidence survives, and say which messages they flagged.
func TestReplayExportAndImportFlagForgedFacts(t *testing.T) {
	ctx := ctxT(t)
	b, _ := bustest.Start(t)
	fill(t, b, 1, 2) // runa: 2 turns and its end, sequences 1-3
	forged, err := events.NewFact(events.Meta{Suite: "s1", Run: "runa", TaskGeneration: 1, Position: 4,
		Producer: events.Producer{Service: events.OwnerGrader, Instance: "forger"}},
		events.GradeVerdict{Verdict: events.GraderVerdict{AttemptID: "runa", SnapshotID: events.DigestOf([]byte("x")), Revision: 1,
			Instruments: []events.InstrumentResult{{Instrument: "tests", Version: "1", Required: true, Outcome: events.InstrumentPassed}},
			Result:      events.VerdictOK()}})
	if err != nil {
		t.Fatal(err)
	}
	data, _ := events.Encode(forged)
	if _, err := b.JetStream().PublishMsg(ctx, &nats.Msg{Subject: "fact.s1.runa.run.ended", Data: data}); err != nil {
		t.Fatal(err)
	}
	check := func(what string, src replay.Source) {
		t.Helper()
		in := projections.KindsFold.Start()
		res, err := replay.Run(ctx, src, in, nil)
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if res.Applied != 3 || len(res.Bad) != 1 || res.Bad[0].Seq != 4 || !errors.Is(res.Bad[0].Err, events.ErrSubjectMismatch) {
			t.Fatalf("%s: %+v", what, res)
		}
		if counts, _ := projections.KindsFold.State(in); counts[events.KindGradeVerdict] != 0 || counts[events.KindRunEnded] != 1 {
			t.Fatalf("%s: the forged verdict was folded: %v", what, counts)
		}
	}
	check("stream", replay.Stream(b, bus.ReadOptions{}))

	var buf bytes.Buffer
	exp, err := b.Export(ctx, &buf, bus.ReadOptions{})
	if err != nil || exp.Messages != 4 || len(exp.Flagged) != 1 || exp.Flagged[0].Seq != 4 ||
		!errors.Is(exp.Flagged[0].Err, events.ErrSubjectMismatch) {
		t.Fatalf("export: %+v, %v", exp, err)
	}
	exported := bytes.Clone(buf.Bytes())
	check("export", replay.Reader(bytes.NewReader(exported)))

	dst, _ := bustest.Start(t)
	imp, err := dst.Import(ctx, bytes.NewReader(exported))
	if err != nil || imp.Messages != 4 || len(imp.Flagged) != 1 || imp.Flagged[0].Subject != "fact.s1.runa.run.ended" ||
		!errors.Is(imp.Flagged[0].Err, events.ErrSubjectMismatch) {
		t.Fatalf("import: %+v, %v", imp, err)
	}
	check("import", replay.Stream(dst, bus.ReadOptions{}))
}

// Replays can start at a sequence or a time, and keep only some facts.
func TestReplayFromSequenceAndFilter(t *testing.T) {
	ctx := ctxT(t)
	b, _ := bustest.Start(t)
	fill(t, b, 2, 3) // 8 facts
	in := projections.KindsFold.Start()
	res, err := replay.Run(ctx, replay.Stream(b, bus.ReadOptions{FromSeq: 5}), in, func(f events.Fact) bool {
		return f.Kind() == events.KindRunEnded
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.Applied != 2 || res.Skipped != 2 || res.LastSeq != 8 {
		t.Fatalf("result %+v", res)
	}
	res, err = replay.Run(ctx, replay.Stream(b, bus.ReadOptions{FromTime: time.Now().Add(time.Hour)}), projections.KindsFold.Start(), nil)
	if err != nil || res.Applied != 0 {
		t.Fatalf("replay from the future: %+v, %v", res, err)
	}
	res, err = replay.Run(ctx, replay.Stream(b, bus.ReadOptions{Filter: "fact.s1.runa.>"}), projections.KindsFold.Start(), nil)
	if err != nil || res.Applied != 4 {
		t.Fatalf("replay of one run: %+v, %v", res, err)
	}
}

// Resume applies only what arrived since the saved position.
func TestResumeFromSavedPosition(t *testing.T) {
	ctx := ctxT(t)
	b, _ := bustest.Start(t)
	fill(t, b, 1, 3) // 4 facts
	in := projections.KindsFold.Start()
	res, err := replay.Resume(ctx, b, "kinds-sink", in, bus.ReadOptions{})
	if err != nil || res.Applied != 4 {
		t.Fatalf("first resume: %+v, %v", res, err)
	}
	res, err = replay.Resume(ctx, b, "kinds-sink", in, bus.ReadOptions{})
	if err != nil || res.Applied != 0 {
		t.Fatalf("resume with nothing new: %+v, %v", res, err)
	}
	if _, err := b.Append(ctx, bus.ExpectLast(4), bus.Pending{Fact: bustest.Claim(t, "s1", "runa", 5)}); err != nil {
		t.Fatal(err)
	}
	res, err = replay.Resume(ctx, b, "kinds-sink", in, bus.ReadOptions{})
	if err != nil || res.Applied != 1 {
		t.Fatalf("resume after one more fact: %+v, %v", res, err)
	}
	if pos, _ := b.LoadPosition(ctx, "kinds-sink"); pos != 5 {
		t.Fatalf("saved position %d, want 5", pos)
	}
}
