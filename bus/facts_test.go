package bus_test

import (
	"testing"

	"github.com/factline/factline/bus"
	"github.com/factline/factline/bus/bustest"
	"github.com/factline/factline/events"
)

// A runner reads its run's facts at every step of a turn; a cached log
// hands them out without copying the whole log each time (which cost a
// 65 KB copy a read at 400 facts and grew with the run). What it hands out
// is still the log's facts, in order, as the log grows, and a caller
// appending to it changes nothing the cache holds.
func TestACachedLogsFactsAreNotCopiedOnEveryRead(t *testing.T) {
	ctx := testCtx(t)
	b, _ := bustest.Start(t)
	expect := appendRun(t, b, "s", "r1", 1, 50, bus.Expect{})
	c := b.NewRunLogs(8)
	log, err := c.Load(ctx, "s", "r1")
	if err != nil {
		t.Fatal(err)
	}
	same := func(facts []events.Fact, log bus.RunLog) {
		t.Helper()
		if len(facts) != len(log.Records) {
			t.Fatalf("%d facts for %d records", len(facts), len(log.Records))
		}
		for i, r := range log.Records {
			if facts[i].ID != r.Fact.ID {
				t.Fatalf("fact %d is %s, its record's %s", i, facts[i].ID, r.Fact.ID)
			}
		}
	}
	first := log.Facts()
	same(first, log)
	if n := testing.AllocsPerRun(100, func() { _ = log.Facts() }); n != 0 {
		t.Errorf("reading a cached log's facts allocated %.0f times, want none", n)
	}
	// A caller appends to what it got; the cache's log then grows.
	_ = append(first, bustest.Claim(t, "s", "r1", 999))
	appendRun(t, b, "s", "r1", 51, 5, expect)
	grown, err := c.Load(ctx, "s", "r1")
	if err != nil {
		t.Fatal(err)
	}
	same(grown.Facts(), grown)
	if len(grown.Records) != 55 || len(first) != 50 {
		t.Fatalf("grown to %d records, the first read holds %d facts; want 55 and 50", len(grown.Records), len(first))
	}
}
