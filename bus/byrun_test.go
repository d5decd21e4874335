package bus_test

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/factline/factline/bus"
	"github.com/factline/factline/bus/bustest"
	"github.com/factline/factline/events"
	"github.com/factline/factline/internal/testutil"
)

// With OrderByRun and many workers, the facts of each run are handled one
// at a time and in the order they were appended, while the workers are
// busy with several runs at once.
func TestOrderByRunKeepsEachRunsOrder(t *testing.T) {
	ctx := testCtx(t)
	b, _ := bustest.Start(t)
	const runs, turns = 12, 8
	var (
		mu      sync.Mutex
		handled = map[string][]uint32{}
		inRun   = map[string]int{}
		overlap []string // runs seen in two handlers at once
		total   atomic.Int32
		peak    atomic.Int32 // most handlers running at once, any runs
		running atomic.Int32
	)
	// Every fact is in the stream before the consumer starts, so that its
	// pulls bring several facts of a run at once.
	// Two turns of a run, then two of the next run, and so on: a worker
	// that took the next delivery whatever its run would often take a
	// run's second turn while another worker has its first.
	last := map[string]uint64{}
	for turn := uint32(1); turn <= turns; turn += 2 {
		for r := range runs {
			run := fmt.Sprintf("r%d", r)
			for n := turn; n < turn+2; n++ {
				recs, err := b.Append(ctx, bus.ExpectLast(last[run]), bus.Pending{Fact: bustest.Turn(t, "s", run, uint64(n), n)})
				if err != nil {
					t.Fatal(err)
				}
				last[run] = recs[0].Seq
			}
		}
	}
	consume(t, b, bus.ConsumerConfig{Name: "ordered", Filters: []string{events.KindFilter(events.KindTurnCompleted)},
		Workers: 6, OrderByRun: true},
		func(ctx context.Context, d bus.Delivery) error {
			n := running.Add(1)
			defer running.Add(-1)
			for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
			}
			mu.Lock()
			if inRun[d.Fact.Run]++; inRun[d.Fact.Run] > 1 {
				overlap = append(overlap, d.Fact.Run)
			}
			mu.Unlock()
			// Give another worker the chance to take a fact of this run.
			for range 20 {
				runtime.Gosched()
			}
			time.Sleep(time.Millisecond)
			mu.Lock()
			inRun[d.Fact.Run]--
			handled[d.Fact.Run] = append(handled[d.Fact.Run], d.Fact.Body.(events.TurnCompleted).Evidence.Turn)
			mu.Unlock()
			total.Add(1)
			return nil
		})
	testutil.Within(t, 20*time.Second, "every fact handled", func() bool { return total.Load() == runs*turns })
	mu.Lock()
	defer mu.Unlock()
	if len(overlap) > 0 {
		t.Errorf("runs handled by two workers at once: %v", overlap)
	}
	for r := range runs {
		run := fmt.Sprintf("r%d", r)
		got := handled[run]
		for i, turn := range got {
			if turn != uint32(i)+1 {
				t.Errorf("run %s handled turns %v, want 1..%d in order", run, got, turns)
				break
			}
		}
	}
	if peak.Load() < 2 {
		t.Errorf("at most %d handler ran at once; the runs were not handled in parallel", peak.Load())
	}
}

// A run whose handler is blocked holds up its own later facts and no other
// run's: the other runs' facts are handled while it waits.
func TestOrderByRunBlockedRunHoldsUpOnlyItself(t *testing.T) {
	ctx := testCtx(t)
	b, _ := bustest.Start(t)
	release := make(chan struct{})
	started := make(chan string, 16) // "<run>/<turn>" as each handler starts
	consume(t, b, bus.ConsumerConfig{Name: "ordered", Filters: []string{events.KindFilter(events.KindTurnCompleted)},
		Workers: 4, OrderByRun: true},
		func(ctx context.Context, d bus.Delivery) error {
			turn := d.Fact.Body.(events.TurnCompleted).Evidence.Turn
			started <- fmt.Sprintf("%s/%d", d.Fact.Run, turn)
			if d.Fact.Run == "blocked" && turn == 1 {
				select {
				case <-release:
				case <-ctx.Done():
					return ctx.Err()
				}
			}
			return nil
		})
	last := map[string]uint64{}
	appendTurn := func(run string, turn uint32) {
		t.Helper()
		recs, err := b.Append(ctx, bus.ExpectLast(last[run]), bus.Pending{Fact: bustest.Turn(t, "s", run, uint64(turn), turn)})
		if err != nil {
			t.Fatal(err)
		}
		last[run] = recs[0].Seq
	}
	next := func() string {
		t.Helper()
		select {
		case s := <-started:
			return s
		case <-time.After(20 * time.Second): // a hang guard, not a measurement
			t.Fatal("no handler started")
			return ""
		}
	}
	appendTurn("blocked", 1)
	if s := next(); s != "blocked/1" {
		t.Fatalf("first handled %s, want blocked/1", s)
	}
	// The blocked run's next fact is delivered before the other runs'.
	appendTurn("blocked", 2)
	appendTurn("a", 1)
	appendTurn("b", 1)
	got := map[string]bool{}
	for len(got) < 2 {
		s := next()
		if s == "blocked/2" {
			t.Fatal("blocked/2 was handled while blocked/1 still was")
		}
		got[s] = true
	}
	if !got["a/1"] || !got["b/1"] {
		t.Fatalf("handled %v while blocked/1 waited, want a/1 and b/1", got)
	}
	close(release)
	if s := next(); s != "blocked/2" {
		t.Fatalf("after blocked/1 finished, handled %s, want blocked/2", s)
	}
}
