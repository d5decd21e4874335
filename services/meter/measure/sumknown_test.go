package measure

import "testing"

// TestSumKnownNeverTurnsUnknownIntoZero: unknown figures leave the total
// nil and are counted apart; known ones add up and are counted; a nil
// counter is left alone.
func TestSumKnownNeverTurnsUnknownIntoZero(t *testing.T) {
	var total *uint64
	known, unknown := 0, 0
	sumKnown(&total, nil, &known, &unknown)
	if total != nil || known != 0 || unknown != 1 {
		t.Fatalf("after an unknown: total %v, known %d, unknown %d; want nil, 0, 1", total, known, unknown)
	}
	sumKnown(&total, ptr[uint64](0), &known, &unknown)
	sumKnown(&total, ptr[uint64](7), &known, nil)
	sumKnown(&total, nil, &known, nil)
	if total == nil || *total != 7 || known != 2 || unknown != 1 {
		t.Fatalf("after 0, 7 and an unknown: total %v, known %d, unknown %d; want 7, 2, 1", total, known, unknown)
	}
}
