package bus_test

import (
	"strings"
	"testing"

	"github.com/factline/factline/bus"
	"github.com/factline/factline/bus/bustest"
)

// A fact links to the run's previous eight messages, newest first as
// deltas: BenchmarkLoadRunLinks found a cold load of a 420-fact run as
// fast with 8 links as with 32, and 8 cost 49 header bytes per fact where
// 32 cost 141.
func TestAFactLinksTheRunsLastEightMessages(t *testing.T) {
	var e bus.Expect
	for seq := uint64(10); seq <= 200; seq += 10 {
		e = e.Then(seq)
	}
	if got, want := e.Header(), "200,10,10,10,10,10,10,10"; got != want {
		t.Errorf("header = %q, want %q", got, want)
	}
}

// A run longer than its links reach still loads whole,
// and a reader keeps reading runs written with more links than it writes.
func TestALongRunLoadsWholeWithFewLinksAndWithMany(t *testing.T) {
	ctx := testCtx(t)
	b, _ := bustest.Start(t)
	restore := bus.SetPrevDepth(32)
	old := appendRun(t, b, "s", "old", 1, 40, bus.Expect{})
	restore()
	appendRun(t, b, "s", "new", 1, 40, bus.Expect{})
	for _, run := range []string{"old", "new"} {
		log, err := b.LoadRun(ctx, "s", run)
		if err != nil {
			t.Fatal(err)
		}
		if len(log.Records) != 40 {
			t.Fatalf("%s: loaded %d facts, want 40", run, len(log.Records))
		}
		for i, r := range log.Records {
			if r.Fact.Position != uint64(i+1) {
				t.Fatalf("%s: fact %d has position %d", run, i, r.Fact.Position)
			}
		}
	}
	if n := strings.Count(old.Header(), ","); n != 31 {
		t.Errorf("a run written with 32 links carries %d", n+1)
	}
}
