package bus_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/factline/factline/bus"
	"github.com/factline/factline/bus/bustest"
	"github.com/factline/factline/events"
)

// batchBus is a bus on a single embedded server that commits several facts
// as one atomic batch (on one replica it otherwise would not: see
// AppendBatch).
func batchBus(t *testing.T) *bus.Bus {
	t.Helper()
	srv := bustest.Server(t, bus.EmbeddedConfig{})
	b := bustest.OpenWith(t, srv, bus.Config{AtomicBatchesOnOneReplica: true})
	if !b.AtomicBatches() {
		t.Fatal("a FACTS made by this bus does not take atomic batches")
	}
	return b
}

// turns are n turn facts of one run from position pos on.
func turns(t *testing.T, suite, run string, pos uint64, n int) []bus.Pending {
	var out []bus.Pending
	for i := range n {
		p := pos + uint64(i)
		out = append(out, bus.Pending{Fact: bustest.Turn(t, suite, run, p, uint32(p))})
	}
	return out
}

// checkRun loads the run (by its links, from nothing) and checks that it
// holds exactly want, in order, each once.
func checkRun(t *testing.T, ctx context.Context, b *bus.Bus, suite, run string, want []bus.Pending) bus.RunLog {
	t.Helper()
	log, err := b.LoadRun(ctx, suite, run)
	if err != nil {
		t.Fatal(err)
	}
	if len(log.Records) != len(want) || len(log.Bad) > 0 {
		t.Fatalf("run %s holds %d facts (%d bad), want %d", run, len(log.Records), len(log.Bad), len(want))
	}
	for i, r := range log.Records {
		if r.Fact.ID != want[i].Fact.ID {
			t.Fatalf("fact %d of %s is %s, want %s", i, run, r.Fact.ID, want[i].Fact.ID)
		}
	}
	return log
}

// A batch lands whole at consecutive sequences, and its records say where;
// the run then loads by its links, the later members' naming the earlier
// ones by distance.
func TestAppendBatchLandsWholeAndLoadsByLinks(t *testing.T) {
	t.Parallel()
	b := batchBus(t)
	ctx := testCtx(t)
	// Another run's fact in between, so that the run's sequences are not
	// the stream's.
	if _, err := b.Append(ctx, bus.Expect{}, bus.Pending{Fact: bustest.Turn(t, "s", "other", 1, 1)}); err != nil {
		t.Fatal(err)
	}
	first := turns(t, "s", "r", 1, 1)
	recs, err := b.Append(ctx, bus.Expect{}, first...)
	if err != nil {
		t.Fatal(err)
	}
	batch := turns(t, "s", "r", 2, 3)
	got, err := b.AppendBatch(ctx, bus.ExpectLast(recs[0].Seq), batch...)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 || got[0].Seq != recs[0].Seq+1 || got[1].Seq != got[0].Seq+1 || got[2].Seq != got[1].Seq+1 {
		t.Fatalf("batch records %+v, want three consecutive sequences after %d", got, recs[0].Seq)
	}
	all := append(first, batch...)
	log := checkRun(t, ctx, b, "s", "r", all)
	for i, r := range got {
		if log.Records[i+1].Seq != r.Seq {
			t.Fatalf("member %d stored at %d, its record says %d", i, log.Records[i+1].Seq, r.Seq)
		}
	}
	// A fact after the batch links by absolute sequences again.
	next := turns(t, "s", "r", 5, 1)
	if _, err := b.Append(ctx, log.Expect(), next...); err != nil {
		t.Fatal(err)
	}
	checkRun(t, ctx, b, "s", "r", append(all, next...))
}

// Two writers deciding on the same view of a run: one batch wins whole,
// the other gets the concurrency error and nothing of it is stored.
func TestAppendBatchConcurrentWritersOneWinsWhole(t *testing.T) {
	t.Parallel()
	b := batchBus(t)
	ctx := testCtx(t)
	head := turns(t, "s", "r", 1, 1)
	recs, err := b.Append(ctx, bus.Expect{}, head...)
	if err != nil {
		t.Fatal(err)
	}
	expect := bus.ExpectLast(recs[0].Seq)
	const writers = 4
	batches := make([][]bus.Pending, writers)
	errs := make([]error, writers)
	var wg sync.WaitGroup
	for w := range writers {
		batches[w] = turns(t, "s", "r", 2, 3)
		wg.Go(func() { _, errs[w] = b.AppendBatch(ctx, expect, batches[w]...) })
	}
	wg.Wait()
	winner := -1
	for w, err := range errs {
		switch {
		case err == nil && winner >= 0:
			t.Fatalf("writers %d and %d both committed on the same expectation", winner, w)
		case err == nil:
			winner = w
		case !errors.Is(err, bus.ErrConflict):
			t.Fatalf("writer %d: %v, want a conflict", w, err)
		}
	}
	if winner < 0 {
		t.Fatalf("no writer committed: %v", errs)
	}
	checkRun(t, ctx, b, "s", "r", append(head, batches[winner]...))
}

// Commit decides again after a concurrent writer's batch took the run: its
// decision lands whole after the other's, as a single fact's would.
func TestCommitRetriesABatchAfterAConflict(t *testing.T) {
	t.Parallel()
	b := batchBus(t)
	ctx := testCtx(t)
	other := turns(t, "s", "r", 1, 2)
	raced := false
	recs, err := b.Commit(ctx, nil, "s", "r", func(log bus.RunLog) ([]bus.Pending, error) {
		if !raced {
			// Another writer commits between this read and the append.
			raced = true
			if _, err := b.AppendBatch(ctx, log.Expect(), other...); err != nil {
				t.Error(err)
			}
		}
		return turns(t, "s", "r", log.NextPosition(), 2), nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 2 || recs[0].Fact.Position != 3 {
		t.Fatalf("committed %d facts from position %d, want 2 from 3", len(recs), recs[0].Fact.Position)
	}
	checkRun(t, ctx, b, "s", "r", append(other, bus.Pending{Fact: recs[0].Fact}, bus.Pending{Fact: recs[1].Fact}))
}

// A batch whose commit answer is lost after it left: the append fails on
// its own bound, and the retry, a new batch of the same message IDs, is
// recognised as done: the run holds each fact once.
func TestAppendBatchRetryAfterALostCommitDoesNotDuplicate(t *testing.T) {
	t.Parallel()
	srv := bustest.Server(t, bus.EmbeddedConfig{Listen: "127.0.0.1:-1"})
	proxy := bustest.StartProxy(t, strings.TrimPrefix(srv.ClientURL(), "nats://"), nil)
	ctx := testCtx(t)
	b, err := bus.Dial(ctx, proxy.URL(), bus.Config{AtomicBatchesOnOneReplica: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Conn().Close)
	batch := turns(t, "s", "r", 1, 3)
	proxy.OnPublish(func(p bustest.Publish) func() {
		if strings.Contains(string(p.Header), "Nats-Batch-Commit") {
			// The server takes the commit; its answer is lost.
			return proxy.LoseAnswers
		}
		return nil
	})
	if _, err := b.AppendBatch(ctx, bus.Expect{}, batch...); err == nil {
		t.Fatal("an append whose commit answer was lost succeeded")
	}
	proxy.OnPublish(nil)
	proxy.Heal()
	recs, err := b.AppendBatch(ctx, bus.Expect{}, batch...)
	if err != nil {
		t.Fatalf("the retry: %v", err)
	}
	for i, r := range recs {
		if !r.Duplicate || r.Fact.ID != batch[i].Fact.ID {
			t.Fatalf("retry record %d: %+v, want the stored fact marked duplicate", i, r)
		}
	}
	checkRun(t, ctx, b, "s", "r", batch)
}

// A server restart between a batch's members and its commit: the server
// has forgotten the batch, refuses the commit as incomplete, and the facts
// go one at a time instead, each stored once.
func TestAppendBatchSurvivesARestartMidBatch(t *testing.T) {
	t.Parallel()
	rs := bustest.StartRestartable(t)
	proxy := bustest.StartProxy(t, rs.Config.Listen, nil)
	ctx := testCtx(t)
	b, err := bus.Dial(ctx, proxy.URL(), bus.Config{AtomicBatchesOnOneReplica: true}, nats.ReconnectWait(50*time.Millisecond), nats.MaxReconnects(-1))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Conn().Close)
	head := turns(t, "s", "r", 1, 1)
	recs, err := b.Append(ctx, bus.Expect{}, head...)
	if err != nil {
		t.Fatal(err)
	}
	restarted := false
	proxy.OnPublish(func(p bustest.Publish) func() {
		if !restarted && strings.Contains(string(p.Header), "Nats-Batch-Commit") {
			restarted = true
			rs.Restart() // before the server has the commit
		}
		return nil
	})
	batch := turns(t, "s", "r", 2, 3)
	got, err := b.AppendBatch(ctx, bus.ExpectLast(recs[0].Seq), batch...)
	if !restarted {
		t.Fatal("the commit never passed the proxy")
	}
	if err != nil {
		// The commit may be lost with the connection rather than refused:
		// the caller retries, as Commit's callers do.
		var again []bus.Record
		for range 50 {
			if again, err = b.AppendBatch(ctx, bus.ExpectLast(recs[0].Seq), batch...); err == nil {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
		if err != nil {
			t.Fatalf("after the restart: %v", err)
		}
		got = again
	}
	if len(got) != 3 {
		t.Fatalf("%d records, want 3", len(got))
	}
	checkRun(t, ctx, b, "s", "r", append(head, batch...))
}

// A FACTS made before factline asked for atomic batches: the bus appends
// the facts one at a time, as before, and factline setup's
// AllowAtomicBatches turns batches on for buses opened after it.
func TestAppendBatchOnAStreamWithoutBatchesAppendsOneAtATime(t *testing.T) {
	t.Parallel()
	srv := bustest.Server(t, bus.EmbeddedConfig{})
	ctx := testCtx(t)
	nc, err := srv.Connect()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	b := bustest.OpenWith(t, srv, bus.Config{AtomicBatchesOnOneReplica: true})
	js := b.JetStream()
	s, err := js.Stream(ctx, bus.FactsStream)
	if err != nil {
		t.Fatal(err)
	}
	cfg := s.CachedInfo().Config
	cfg.AllowAtomicPublish = false
	if _, err := js.UpdateStream(ctx, cfg); err != nil {
		t.Fatalf("make FACTS as an older factline did: %v", err)
	}
	old := bustest.OpenWith(t, srv, bus.Config{AtomicBatchesOnOneReplica: true})
	if old.AtomicBatches() {
		t.Fatal("a bus on a FACTS without allow_atomic says it takes batches")
	}
	batch := turns(t, "s", "r", 1, 3)
	if _, err := old.AppendBatch(ctx, bus.Expect{}, batch...); err != nil {
		t.Fatal(err)
	}
	// b opened when FACTS took batches: its first batch is refused as
	// disabled, and it falls back without failing.
	more := turns(t, "s", "r", 4, 2)
	log := checkRun(t, ctx, b, "s", "r", batch)
	if _, err := b.AppendBatch(ctx, log.Expect(), more...); err != nil {
		t.Fatalf("a batch to a stream that stopped taking them: %v", err)
	}
	if b.AtomicBatches() {
		t.Fatal("a bus refused a batch as disabled still says it takes batches")
	}
	checkRun(t, ctx, b, "s", "r", append(batch, more...))
	changed, err := old.AllowAtomicBatches(ctx)
	if err != nil || !changed {
		t.Fatalf("AllowAtomicBatches: changed %v, %v", changed, err)
	}
	if !old.AtomicBatches() {
		t.Fatal("after AllowAtomicBatches the bus still appends one at a time")
	}
	if changed, err := old.AllowAtomicBatches(ctx); err != nil || changed {
		t.Fatalf("AllowAtomicBatches again: changed %v, %v; want no change", changed, err)
	}
}

// A run link naming members of its own batch by distance is read against
// the message's own sequence; a distance that reaches before the stream's
// start is malformed, and the loader falls back to a scan.
func TestRelativeRunLinksPointIntoTheBatch(t *testing.T) {
	t.Parallel()
	b := batchBus(t)
	ctx := testCtx(t)
	// A message of the run whose link claims a member 5 back from
	// sequence 2: no such message, so the links cannot prove the run
	// complete and the loader scans.
	f := bustest.Turn(t, "s", "bad", 1, 1)
	data, err := events.Encode(f)
	if err != nil {
		t.Fatal(err)
	}
	subj, _ := f.Subject()
	if _, err := b.JetStream().Publish(ctx, "fact.s.pad.turn.completed", []byte("x")); err != nil {
		t.Fatal(err)
	}
	m := &nats.Msg{Subject: subj, Data: data, Header: nats.Header{}}
	m.Header.Set(bus.HeaderPrev, "~5")
	if _, err := b.JetStream().PublishMsg(ctx, m, jetstream.WithMsgID(f.ID.String())); err != nil {
		t.Fatal(err)
	}
	log, err := b.LoadRun(ctx, "s", "bad")
	if err != nil || len(log.Records) != 1 {
		t.Fatalf("load of a run with a malformed relative link: %d facts, %v; want the one fact (by a scan)", len(log.Records), err)
	}
}
