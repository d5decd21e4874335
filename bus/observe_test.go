package bus_test

import (
	"testing"

	"github.com/factline/factline/bus"
	"github.com/factline/factline/bus/bustest"
)

// A writer's own commits extend its cached log where it lies, the way a
// load extends it: copying the whole log at every commit made a long run's
// turns cost more the longer it ran (issue 38). A log handed out earlier
// keeps what it held.
func TestAWritersCommitsExtendItsCachedLogInPlace(t *testing.T) {
	const commits = 64
	ctx := testCtx(t)
	b, _ := bustest.Start(t)
	cache := b.NewRunLogs(4)
	next := func(log bus.RunLog) ([]bus.Pending, error) {
		return []bus.Pending{{Fact: bustest.Turn(t, "s", "r", log.NextPosition(), uint32(log.NextPosition()))}}, nil
	}
	if _, err := b.CommitAsLastWriter(ctx, cache, "s", "r", next); err != nil {
		t.Fatal(err)
	}
	first, ok := cache.Peek("s", "r")
	if !ok || len(first.Records) != 1 {
		t.Fatalf("the cache holds %d records after the first commit (%v), want 1", len(first.Records), ok)
	}
	firstFact := first.Records[0].Fact.ID
	moved, base := 0, &first.Records[0]
	for range commits {
		if _, err := b.CommitAsLastWriter(ctx, cache, "s", "r", next); err != nil {
			t.Fatal(err)
		}
		log, ok := cache.Peek("s", "r")
		if !ok {
			t.Fatal("the cache lost the run")
		}
		if &log.Records[0] != base {
			moved, base = moved+1, &log.Records[0]
		}
	}
	log, _ := cache.Peek("s", "r")
	if len(log.Records) != commits+1 {
		t.Fatalf("the cache holds %d records, want %d", len(log.Records), commits+1)
	}
	// Growing by appends moves the records about log2(commits) times;
	// a copy at every commit moves them every time.
	if moved > 12 {
		t.Fatalf("the cached records moved %d times in %d commits: the log is copied at each commit", moved, commits)
	}
	if len(first.Records) != 1 || first.Records[0].Fact.ID != firstFact {
		t.Fatalf("a log handed out before the commits changed: %d records", len(first.Records))
	}
}
