package integration

import (
	"bytes"
	"context"
	"sync"
	"testing"
	"time"

	"github.com/factline/factline/bus"
	"github.com/factline/factline/bus/bustest"
	"github.com/factline/factline/events"
)

// What the chaos campaign checks beyond the fault tests' checkOutcome, and
// how it counts a seed's violations.

// countingTB counts the failures reported through it: a seed's
// violations.
type countingTB struct {
	testing.TB
	mu sync.Mutex
	n  int
}

func (c *countingTB) note() {
	c.mu.Lock()
	c.n++
	c.mu.Unlock()
}

func (c *countingTB) Errorf(format string, args ...any) {
	c.TB.Helper()
	c.note()
	c.TB.Errorf(format, args...)
}

func (c *countingTB) Error(args ...any) {
	c.TB.Helper()
	c.note()
	c.TB.Error(args...)
}

func (c *countingTB) Fatalf(format string, args ...any) {
	c.TB.Helper()
	c.note()
	c.TB.Fatalf(format, args...)
}

func (c *countingTB) Fatal(args ...any) {
	c.TB.Helper()
	c.note()
	c.TB.Fatal(args...)
}

func (c *countingTB) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n
}

// momentsIn counts the moments like m in the fault-free outcome: facts
// of m's kind (of notify runs only when m says so), or for a moment at a
// publish the runs with such a fact.
func momentsIn(o suiteOutcome, m moment) int {
	n := 0
	runs := map[string]bool{}
	for _, f := range o.facts {
		if f.Kind() != m.kind || m.notify && !isNotify(f.Run) {
			continue
		}
		if m.published {
			if !runs[f.Run] {
				runs[f.Run] = true
				n++
			}
			continue
		}
		n++
	}
	return n
}

// awaitSuiteReported waits until the suite's report is in the log.
func awaitSuiteReported(t testing.TB, ctx context.Context, b *bus.Bus, suite string, progress func() string) {
	t.Helper()
	for {
		if log, err := b.LoadRun(ctx, suite, events.SuiteScope); err == nil {
			for _, f := range log.Facts() {
				if f.Kind() == events.KindSuiteReported {
					return
				}
			}
		}
		if ctx.Err() != nil {
			t.Fatalf("the suite was never reported%s", progress())
		}
		time.Sleep(300 * time.Millisecond)
	}
}

// deadLetters fails for every message dead-lettered.
func deadLetters(t testing.TB, ctx context.Context, b *bus.Bus) {
	t.Helper()
	dead, err := b.DeadLetters(ctx, "")
	if err != nil {
		t.Errorf("read the dead letters: %v", err)
		return
	}
	for _, d := range dead {
		t.Errorf("dead letter from %s (%s seq %d): %s", d.Consumer, d.Subject, d.StreamSeq, d.Reason)
	}
}

// checkAcknowledged checks that every fact the cluster acknowledged to a
// service process is stored at the sequence the acknowledgement named,
// on its subject, as it was published (a duplicate's acknowledgement: the
// message stored first under the same ID). It returns how many it
// checked.
func checkAcknowledged(t testing.TB, ctx context.Context, b *bus.Bus, acks []bustest.Ack) int {
	t.Helper()
	stored := map[uint64]bus.Raw{}
	if _, err := b.Read(ctx, bus.ReadOptions{}, func(raw bus.Raw) error {
		stored[raw.Seq] = raw
		return nil
	}); err != nil {
		t.Errorf("read the log: %v", err)
		return 0
	}
	n := 0
	for _, a := range acks {
		if a.Stream != bus.FactsStream {
			continue
		}
		n++
		raw, ok := stored[a.Seq]
		switch {
		case !ok:
			t.Errorf("acknowledged fact lost: %s (msg id %q) was acknowledged at sequence %d, which the log does not hold", a.Subject, a.MsgID(), a.Seq)
		case raw.Subject != a.Subject:
			t.Errorf("acknowledged fact lost: %s (msg id %q) was acknowledged at sequence %d, which holds %s", a.Subject, a.MsgID(), a.Seq, raw.Subject)
		case a.Duplicate && raw.MsgID != a.MsgID():
			t.Errorf("acknowledged duplicate of %s (msg id %q) at sequence %d, which holds msg id %q", a.Subject, a.MsgID(), a.Seq, raw.MsgID)
		case !a.Duplicate && !bytes.Equal(raw.Data, a.Data):
			t.Errorf("acknowledged fact changed: %s (msg id %q) at sequence %d holds other bytes than were acknowledged", a.Subject, a.MsgID(), a.Seq)
		}
	}
	return n
}
