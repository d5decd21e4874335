package stats

import (
	"errors"
	"math"
	"testing"
)

// A signed-rank test needs a non-zero, finite difference; zeros are
// dropped and counted, tied magnitudes share their average rank, and the
// statistic is symmetric in the sign of the differences.
func TestWilcoxonSignedRankDropsZerosAndAveragesTies(t *testing.T) {
	for _, d := range [][]float64{nil, {0, 0}, {1, math.NaN()}, {math.Inf(1)}} {
		if _, err := WilcoxonSignedRank(d); !errors.Is(err, ErrInput) {
			t.Errorf("%v: %v, want ErrInput", d, err)
		}
	}
	w, err := WilcoxonSignedRank([]float64{0, 1, -1, 2, 0, 3})
	if err != nil {
		t.Fatal(err)
	}
	// |d| = 1, 1, 2, 3: ranks 1.5, 1.5, 3, 4; W+ = 1.5 + 3 + 4.
	if w.N != 4 || w.Zeros != 2 || w.WPlus != 8.5 {
		t.Fatalf("%+v", w)
	}
	m, _ := WilcoxonSignedRank([]float64{0, -1, 1, -2, 0, -3})
	if m.Z != -w.Z || m.P != w.P {
		t.Fatalf("mirrored: %+v vs %+v", m, w)
	}
}
