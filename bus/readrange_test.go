package bus_test

import (
	"errors"
	"slices"
	"testing"

	"github.com/factline/factline/bus"
	"github.com/factline/factline/bus/bustest"
)

// A range read delivers, in stream order, the messages of the range under
// its prefix, and only those: another suite's, between them, are passed
// over.
func TestReadRangeDeliversThePrefixsMessagesInOrder(t *testing.T) {
	ctx := testCtx(t)
	b, _ := bustest.Start(t)
	appendRun(t, b, "s", "r1", 1, 2, bus.Expect{}) // 1, 2
	appendRun(t, b, "t", "r1", 1, 3, bus.Expect{}) // 3, 4, 5
	appendRun(t, b, "s", "r2", 1, 2, bus.Expect{}) // 6, 7
	var seqs []uint64
	last, err := b.ReadRange(ctx, "fact.s.", 2, 7, func(r bus.Raw) error {
		if _, err := r.Fact(); err != nil {
			t.Errorf("sequence %d: %v", r.Seq, err)
		}
		seqs = append(seqs, r.Seq)
		return nil
	})
	if err != nil || last != 7 || !slices.Equal(seqs, []uint64{2, 6, 7}) {
		t.Fatalf("read %v, last %d, err %v; want [2 6 7], 7, nil", seqs, last, err)
	}
}

// A range with a sequence the stream does not hold (not yet there, or not
// yet on the replica that answered) delivers what comes before it and
// says so with ErrRangeGap, for its caller to read on another way.
func TestReadRangeSaysWhereASequenceIsMissing(t *testing.T) {
	ctx := testCtx(t)
	b, _ := bustest.Start(t)
	appendRun(t, b, "s", "r1", 1, 3, bus.Expect{})
	var seqs []uint64
	last, err := b.ReadRange(ctx, "fact.s.", 1, 5, func(r bus.Raw) error { seqs = append(seqs, r.Seq); return nil })
	if !errors.Is(err, bus.ErrRangeGap) || last != 3 || !slices.Equal(seqs, []uint64{1, 2, 3}) {
		t.Fatalf("read %v, last %d, err %v; want [1 2 3], 3, ErrRangeGap", seqs, last, err)
	}
}

// A range longer than the direct gets one read keeps in flight is read
// whole, in order.
func TestReadRangeReadsPastItsChunks(t *testing.T) {
	ctx := testCtx(t)
	b, _ := bustest.Start(t)
	appendRun(t, b, "s", "r1", 1, 150, bus.Expect{})
	var seqs []uint64
	last, err := b.ReadRange(ctx, "fact.s.", 1, 150, func(r bus.Raw) error { seqs = append(seqs, r.Seq); return nil })
	if err != nil || last != 150 || len(seqs) != 150 || !slices.IsSorted(seqs) || seqs[0] != 1 {
		t.Fatalf("read %d messages (first %v), last %d, err %v; want 1…150", len(seqs), seqs[:min(3, len(seqs))], last, err)
	}
}
