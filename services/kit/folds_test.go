package kit_test

import (
	"fmt"
	"testing"

	"github.com/factline/factline/bus"
	"github.com/factline/factline/events"
	"github.com/factline/factline/services/kit"
)

func records(seqs ...uint64) []bus.Record {
	out := make([]bus.Record, len(seqs))
	for i, s := range seqs {
		out[i].Seq = s
	}
	return out
}

// A fold is handed back only for the log it was folded from: the record it
// stopped after must still be at its place, and it must not go past the
// point the caller folds to. Anything else folds from the start.
func TestAFoldIsUsedOnlyOnTheLogItFolded(t *testing.T) {
	f := kit.NewFolds[string](0)
	log := records(3, 8, 9, 15)
	f.Put("s", "r", "fold of 3", log, 3)
	if _, _, ok := f.Take("s", "r", records(3, 8, 10, 15), 4); ok {
		t.Error("a fold was handed back for a log whose third record is another")
	}
	if _, _, ok := f.Take("s", "r", log, 2); ok {
		t.Error("a fold of 3 records was handed back to fold only 2")
	}
	if _, _, ok := f.Take("s", "other", log, 4); ok {
		t.Error("another run's fold was handed back")
	}
	st, n, ok := f.Take("s", "r", log, 4)
	if !ok || st != "fold of 3" || n != 3 {
		t.Fatalf("Take = %q, %d, %v; want the fold of 3", st, n, ok)
	}
	if _, _, ok := f.Take("s", "r", log, 4); ok {
		t.Error("a fold was handed back twice: a second handler would fold on a state being folded")
	}
	f.Put("s", "r", "fold of 4", log, 4)
	f.Put("s", "r", "fold of 2", log, 2)
	if st, _, _ := f.Take("s", "r", log, 4); st != "fold of 4" {
		t.Errorf("an older fold replaced a newer one: got %q", st)
	}
}

// The cache keeps at most FoldCacheSize runs, the least recently used
// going first.
func TestFoldsAreBounded(t *testing.T) {
	f := kit.NewFolds[int](0)
	log := records(1)
	for i := range kit.FoldCacheSize + 1 {
		f.Put("s", fmt.Sprint("r", i), i, log, 1)
	}
	if _, _, ok := f.Take("s", "r0", log, 1); ok {
		t.Error("the least recently used run outlived the bound")
	}
	last := kit.FoldCacheSize
	if v, _, ok := f.Take("s", fmt.Sprint("r", last), log, 1); !ok || v != last {
		t.Errorf("the newest run's fold: %v, %v", v, ok)
	}
}

// FoldOn folds on from a kept fold over only the records since, and from
// the start when none fits; Folded counts exactly the facts it folded.
func TestFoldOnFoldsOnlyTheRecordsSinceTheKeptFold(t *testing.T) {
	f := kit.NewFolds[int](0)
	log := records(1, 2, 3, 4, 5)
	start := func() int { return 100 }
	count := func(st int, _ events.Fact) int { return st + 1 }
	if st := f.FoldOn("s", "r", log, 3, start, count); st != 103 || f.Folded() != 3 {
		t.Fatalf("first fold: %d after %d facts, want 103 after 3", st, f.Folded())
	}
	f.Put("s", "r", 103, log, 3)
	if st := f.FoldOn("s", "r", log, 5, start, count); st != 105 || f.Folded() != 5 {
		t.Fatalf("folding on: %d after %d facts in all, want 105 after 5", st, f.Folded())
	}
	// Taken out and not put back: the next fold starts over.
	if st := f.FoldOn("s", "r", log, 5, start, count); st != 105 || f.Folded() != 10 {
		t.Errorf("folding again with nothing kept: %d after %d facts in all, want 105 after 10", st, f.Folded())
	}
}
