package bus_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/factline/factline/bus"
	"github.com/factline/factline/bus/bustest"
)

// A read told that a sequence is committed does not end before it has
// delivered it, even when its consumer counts nothing more pending: that
// is what a consumer on a lagging replica counts.
func TestReadThroughWaitsForTheNamedFact(t *testing.T) {
	ctx := testCtx(t)
	b, _ := bustest.Start(t)
	expect := appendRun(t, b, "s", "r", 1, 3, bus.Expect{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		time.Sleep(300 * time.Millisecond)
		appendRun(t, b, "s", "r", 4, 2, expect)
	}()
	var seqs []uint64
	last, err := b.Read(ctx, bus.ReadOptions{Filter: "fact.s.>", FromSeq: 1, Through: 5}, func(r bus.Raw) error {
		seqs = append(seqs, r.Seq)
		return nil
	})
	<-done
	if err != nil {
		t.Fatal(err)
	}
	if last != 5 || len(seqs) != 5 {
		t.Fatalf("read ended at %d after %v, want through 5", last, seqs)
	}
}

// A read whose caller has already read past the named sequence ends at
// once when nothing is pending.
func TestReadThroughAlreadyPassed(t *testing.T) {
	ctx := testCtx(t)
	b, _ := bustest.Start(t)
	appendRun(t, b, "s", "r", 1, 3, bus.Expect{})
	n := 0
	last, err := b.Read(ctx, bus.ReadOptions{Filter: "fact.s.>", FromSeq: 4, Through: 2}, func(bus.Raw) error { n++; return nil })
	if err != nil || last != 0 || n != 0 {
		t.Fatalf("read %d, last %d, err %v; want nothing", n, last, err)
	}
}

// The stream leader says where a filter ends, wildcards included, and
// "nowhere" for a filter with no message.
func TestLeaderLastSeq(t *testing.T) {
	ctx := testCtx(t)
	b, _ := bustest.Start(t)
	expect := appendRun(t, b, "s", "r1", 1, 2, bus.Expect{})
	appendRun(t, b, "s", "r2", 1, 2, bus.Expect{})
	appendRun(t, b, "s", "r1", 3, 1, expect)
	for filter, want := range map[string]uint64{"fact.s.>": 5, "fact.s.r2.>": 4, "fact.s.r1.>": 5, "fact.none.>": 0} {
		got, err := b.LeaderLastSeq(ctx, bus.FactsStream, filter)
		if err != nil || got != want {
			t.Errorf("newest on %s = %d, %v; want %d", filter, got, err, want)
		}
	}
	if _, err := b.LeaderLastSeq(ctx, "NOSUCH", "x.>"); err == nil || !strings.Contains(err.Error(), "NOSUCH") {
		t.Errorf("an unknown stream: %v, want an error naming it", err)
	}
}

// A handler's load holds the fact it was delivered: a log that stops short
// of it is fetched again, and reported as behind when it never arrives.
func TestLoadThroughWaitsForTheDeliveredFact(t *testing.T) {
	ctx := testCtx(t)
	b, _ := bustest.Start(t)
	expect := appendRun(t, b, "s", "r", 1, 3, bus.Expect{})
	cache := b.NewRunLogs(0)
	done := make(chan struct{})
	go func() {
		defer close(done)
		time.Sleep(100 * time.Millisecond)
		appendRun(t, b, "s", "r", 4, 1, expect)
	}()
	log, err := cache.LoadThrough(ctx, "s", "r", 4)
	<-done
	if err != nil {
		t.Fatal(err)
	}
	if log.LastSeq != 4 || len(log.Records) != 4 {
		t.Fatalf("loaded %d facts up to %d, want 4 up to 4", len(log.Records), log.LastSeq)
	}
	if _, err := cache.LoadThrough(ctx, "s", "r", 99); !errors.Is(err, bus.ErrBehind) {
		t.Fatalf("a fact that never comes: %v, want ErrBehind", err)
	}
}
