package kit_test

import (
	"fmt"
	"testing"

	"github.com/factline/factline/bus"
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
