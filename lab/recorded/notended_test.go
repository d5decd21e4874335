package recorded_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/factline/factline/bus"
	"github.com/factline/factline/bus/bustest"
	"github.com/factline/factline/cases"
	"github.com/factline/factline/events"
	"github.com/factline/factline/lab/recorded"
	"github.com/factline/factline/projections/replay"
)

// A run that has not ended (requested and never started, or still
// running) has no recorded outcome to compare a policy with: it is
// skipped, saying so, and not counted as decided the same.
func TestARunThatHasNotEndedIsSkippedNotCountedTheSame(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	b, _ := bustest.Start(t)
	meta := func(run string, pos uint64, owner events.Owner) events.Meta {
		return events.Meta{Suite: "s", Run: run, TaskGeneration: 1, Position: pos, Producer: events.Producer{Service: owner, Instance: "test"}}
	}
	req := events.RunRequested{Case: "c", CaseDigest: events.DigestOf([]byte("c")), Treatment: "t",
		TreatmentDigest: events.DigestOf([]byte("t")), Trial: 1}
	for _, run := range []string{"ended", "waiting"} {
		f, err := events.NewFact(meta(run, 1, events.OwnerMeter), req)
		if err != nil {
			t.Fatal(err)
		}
		recs, err := b.Append(ctx, bus.Expect{}, bus.Pending{Fact: f})
		if err != nil {
			t.Fatal(err)
		}
		if run == "ended" {
			end, err := events.NewFact(meta(run, 2, events.OwnerRunner), events.RunEnded{Status: events.RunDone, Reason: "answered"})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := b.Append(ctx, bus.ExpectLast(recs[0].Seq), bus.Pending{Fact: end}); err != nil {
				t.Fatal(err)
			}
		}
	}
	resolve := func(context.Context, events.RunRequested) (cases.Effective, error) {
		return cases.Effective{Case: &cases.Case{ID: "c"}, Treatment: &cases.Treatment{ID: "t"}}, nil
	}
	res, err := recorded.Load(ctx, replay.Stream(b, bus.ReadOptions{}), nil, resolve)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, r := range res.Runs {
		ids = append(ids, r.ID)
	}
	if len(ids) != 1 || ids[0] != "ended" {
		t.Errorf("runs replayed: %v, want the ended one alone", ids)
	}
	if len(res.Skipped) != 1 || res.Skipped[0].Run != "waiting" || !strings.Contains(res.Skipped[0].Reason, "has not ended") {
		t.Errorf("skipped %+v, want run waiting skipped as not ended", res.Skipped)
	}
}
