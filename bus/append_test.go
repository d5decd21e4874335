package bus_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/factline/factline/bus"
	"github.com/factline/factline/bus/bustest"
	"github.com/factline/factline/events"
)

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// Two writers that both believe the run ends at the same sequence: exactly
// one append lands, the other is told it lost; after a reload the loser's
// retry goes through.
func TestConcurrentAppendsOneWins(t *testing.T) {
	ctx := testCtx(t)
	b, _ := bustest.Start(t)
	first, err := b.Append(ctx, bus.Expect{}, bus.Pending{Fact: bustest.Claim(t, "s", "r1", 1)})
	if err != nil {
		t.Fatal(err)
	}
	expect := first[0].Seq

	facts := []events.Fact{bustest.Turn(t, "s", "r1", 2, 1), bustest.Turn(t, "s", "r1", 2, 1)}
	var wg sync.WaitGroup
	errs := make([]error, 2)
	start := make(chan struct{})
	for i := range 2 {
		wg.Go(func() {
			<-start
			_, errs[i] = b.Append(ctx, bus.ExpectLast(expect), bus.Pending{Fact: facts[i], MsgID: facts[i].ID.String()})
		})
	}
	close(start)
	wg.Wait()

	wins, losses := 0, 0
	for i, err := range errs {
		switch {
		case err == nil:
			wins++
		case errors.Is(err, bus.ErrConflict):
			losses++
			var ce *bus.ConflictError
			if !errors.As(err, &ce) || ce.Expected != expect || ce.Run != "r1" {
				t.Fatalf("conflict error lacks detail: %#v", err)
			}
		default:
			t.Fatalf("writer %d: unexpected error %v", i, err)
		}
	}
	if wins != 1 || losses != 1 {
		t.Fatalf("wins=%d losses=%d, want 1 and 1 (errs %v)", wins, losses, errs)
	}

	log, err := b.LoadRun(ctx, "s", "r1")
	if err != nil {
		t.Fatal(err)
	}
	if len(log.Records) != 2 {
		t.Fatalf("run has %d facts after the race, want 2", len(log.Records))
	}
	retry := bustest.Turn(t, "s", "r1", log.NextPosition(), 2)
	recs, err := b.Append(ctx, log.Expect(), bus.Pending{Fact: retry})
	if err != nil {
		t.Fatalf("loser's retry after reload: %v", err)
	}
	if recs[0].Seq <= log.LastSeq {
		t.Fatalf("retry landed at %d, not after %d", recs[0].Seq, log.LastSeq)
	}
}

// A writer whose fact already landed (its ack was lost) retries with its
// stale expectation: the server refuses on the sequence check before it
// looks at the message ID, and the reload recognises the fact.
func TestRetryOfCommittedFactIsRecognised(t *testing.T) {
	ctx := testCtx(t)
	b, _ := bustest.Start(t)
	f := bustest.Claim(t, "s", "r1", 1)
	p := bus.Pending{Fact: f, MsgID: "r1/claim/1"}
	if _, err := b.Append(ctx, bus.Expect{}, p); err != nil {
		t.Fatal(err)
	}

	// The server answers the stale retry with a conflict; Append looks and
	// finds its fact already committed.
	again, err := b.Append(ctx, bus.Expect{}, p)
	if err != nil || len(again) != 1 || !again[0].Duplicate || again[0].Fact.ID != f.ID {
		t.Fatalf("stale retry of a committed fact: %+v, %v", again, err)
	}
	// A different fact with the same stale expectation is a real conflict.
	if _, err := b.Append(ctx, bus.Expect{}, bus.Pending{Fact: bustest.Claim(t, "s", "r1", 1)}); !errors.Is(err, bus.ErrConflict) {
		t.Fatalf("stale append of a new fact: got %v, want a conflict", err)
	}

	calls := 0
	recs, err := b.Commit(ctx, nil, "s", "r1", func(log bus.RunLog) ([]bus.Pending, error) {
		calls++
		return []bus.Pending{p}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 1 || !recs[0].Duplicate || recs[0].Fact.ID != f.ID {
		t.Fatalf("commit of an already committed fact returned %+v", recs)
	}
	log, err := b.LoadRun(ctx, "s", "r1")
	if err != nil {
		t.Fatal(err)
	}
	if len(log.Records) != 1 {
		t.Fatalf("run holds %d facts, want 1", len(log.Records))
	}
	if calls != 1 {
		t.Fatalf("decide called %d times, want 1", calls)
	}
}

// With a fresh expectation the server itself deduplicates by message ID.
func TestServerDedupWithFreshExpectation(t *testing.T) {
	ctx := testCtx(t)
	b, _ := bustest.Start(t)
	p := bus.Pending{Fact: bustest.Claim(t, "s", "r1", 1), MsgID: "r1/claim/1"}
	recs, err := b.Append(ctx, bus.Expect{}, p)
	if err != nil {
		t.Fatal(err)
	}
	again, err := b.Append(ctx, bus.ExpectLast(recs[0].Seq), p)
	if err != nil {
		t.Fatal(err)
	}
	if !again[0].Duplicate || again[0].Seq != recs[0].Seq {
		t.Fatalf("second append = %+v, want a duplicate of seq %d", again[0], recs[0].Seq)
	}
}

// Many writers race to decide on one run through Commit: every decision
// lands exactly once and positions stay contiguous.
func TestCommitUnderContention(t *testing.T) {
	ctx := testCtx(t)
	b, _ := bustest.Start(t)
	const writers = 6
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for w := range writers {
		wg.Go(func() {
			_, err := b.Commit(ctx, nil, "s", "r1", func(log bus.RunLog) ([]bus.Pending, error) {
				f, err := events.NewFact(events.Meta{Suite: "s", Run: "r1", TaskGeneration: 1, Position: log.NextPosition(),
					Producer: events.Producer{Service: events.OwnerRunner, Instance: "w"}},
					events.RunClaimed{Runner: "w", Lease: uint32(w + 1)})
				return []bus.Pending{{Fact: f, MsgID: "claim/" + string(rune('a'+w))}}, err
			})
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	log, err := b.LoadRun(ctx, "s", "r1")
	if err != nil {
		t.Fatal(err)
	}
	if len(log.Records) != writers {
		t.Fatalf("run holds %d facts, want %d", len(log.Records), writers)
	}
	for i, r := range log.Records {
		if r.Fact.Position != uint64(i+1) {
			t.Fatalf("fact %d has position %d: positions must be contiguous", i, r.Fact.Position)
		}
	}
}

func TestAppendRefusesInvalidAndMixedRuns(t *testing.T) {
	ctx := testCtx(t)
	b, _ := bustest.Start(t)
	bad := bustest.Claim(t, "s", "r1", 1)
	bad.Position = 0
	if _, err := b.Append(ctx, bus.Expect{}, bus.Pending{Fact: bad}); !errors.Is(err, events.ErrInvalidField) {
		t.Fatalf("invalid fact: got %v, want ErrInvalidField", err)
	}
	_, err := b.Append(ctx, bus.Expect{}, bus.Pending{Fact: bustest.Claim(t, "s", "r1", 1)}, bus.Pending{Fact: bustest.Claim(t, "s", "r2", 2)})
	if err == nil {
		t.Fatal("append across two runs succeeded")
	}
}

func testCtxTB(tb testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	tb.Cleanup(cancel)
	return ctx
}

// Past the server's deduplication window only the reload protects against
// a second commit of the same decision: Commit finds the message ID in the
// run and appends nothing.
func TestCommitRecognisesBeyondDedupWindow(t *testing.T) {
	ctx := testCtx(t)
	srv := bustest.Server(t, bus.EmbeddedConfig{})
	b := bustest.OpenWith(t, srv, bus.Config{DedupWindow: 100 * time.Millisecond})
	decide := func(log bus.RunLog) ([]bus.Pending, error) {
		f, err := events.NewFact(events.Meta{Suite: "s", Run: "r1", TaskGeneration: 1, Position: log.NextPosition(),
			Producer: events.Producer{Service: events.OwnerStaller, Instance: "t"}},
			events.StallObserved{Turn: 1, Observation: events.StallObservation{Position: 1}})
		return []bus.Pending{{Fact: f, MsgID: "r1/1/stall"}}, err
	}
	if _, err := b.Commit(ctx, nil, "s", "r1", decide); err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond)
	recs, err := b.Commit(ctx, nil, "s", "r1", decide)
	if err != nil || len(recs) != 1 || !recs[0].Duplicate {
		t.Fatalf("second commit: %+v, %v", recs, err)
	}
	log, err := b.LoadRun(ctx, "s", "r1")
	if err != nil || len(log.Records) != 1 {
		t.Fatalf("run holds %d facts, want 1 (%v)", len(log.Records), err)
	}
}

// Two suites that share a case and a treatment have runs of the same ID,
// and their writers derive the same message IDs: both suites' facts land,
// and each run's log answers to the writer's own ID.
func TestSameRunIDInTwoSuitesBothLand(t *testing.T) {
	ctx := testCtx(t)
	b, _ := bustest.Start(t)
	for _, suite := range []string{"first", "second"} {
		recs, err := b.Append(ctx, bus.Expect{}, bus.Pending{Fact: bustest.Turn(t, suite, "fix-t1", 1, 1), MsgID: "fix-t1/requested"})
		if err != nil {
			t.Fatal(err)
		}
		if recs[0].Duplicate {
			t.Fatalf("%s: the fact was taken for a retry of another suite's", suite)
		}
		log, err := b.LoadRun(ctx, suite, "fix-t1")
		if err != nil {
			t.Fatal(err)
		}
		if len(log.Records) != 1 || !log.Records[0].HasMsgID("fix-t1/requested") {
			t.Fatalf("%s: %d records, ID %q", suite, len(log.Records), log.Records[0].MsgID)
		}
	}
}

// A last-writer commit decides on the cached log first: when somebody else
// appended meanwhile, the append is refused and made again on the fresh
// log, and a decision of nothing on the stale view is made again too.
func TestCommitAsLastWriterSeesOthersWrites(t *testing.T) {
	ctx := testCtx(t)
	b, _ := bustest.Start(t)
	cache := b.NewRunLogs(4)
	turn := func(pos uint64) bus.DecideFunc {
		return func(log bus.RunLog) ([]bus.Pending, error) {
			return []bus.Pending{{Fact: bustest.Turn(t, "s", "r", log.NextPosition(), uint32(pos))}}, nil
		}
	}
	if _, err := b.CommitAsLastWriter(ctx, cache, "s", "r", turn(1)); err != nil {
		t.Fatal(err)
	}
	// Another writer appends behind the cache's back.
	if _, err := b.Commit(ctx, nil, "s", "r", turn(2)); err != nil {
		t.Fatal(err)
	}
	recs, err := b.CommitAsLastWriter(ctx, cache, "s", "r", turn(3))
	if err != nil {
		t.Fatal(err)
	}
	if recs[0].Fact.Position != 3 {
		t.Fatalf("position %d, want 3: the stale view was appended on", recs[0].Fact.Position)
	}
	// Again behind its back; this time the decision needs the new fact.
	if _, err := b.Commit(ctx, nil, "s", "r", turn(4)); err != nil {
		t.Fatal(err)
	}
	recs, err = b.CommitAsLastWriter(ctx, cache, "s", "r", func(log bus.RunLog) ([]bus.Pending, error) {
		if len(log.Records) < 4 {
			return nil, nil // waiting for the fourth fact
		}
		return turn(5)(log)
	})
	if err != nil || len(recs) != 1 || recs[0].Fact.Position != 5 {
		t.Fatalf("got %v, %v: a stale view passed for nothing to do", recs, err)
	}
	log, err := b.LoadRun(ctx, "s", "r")
	if err != nil || len(log.Records) != 5 {
		t.Fatalf("%d facts, %v", len(log.Records), err)
	}
}
