package stats

import (
	"fmt"
	"math"
	"slices"
)

// Wilcoxon is the Wilcoxon signed-rank test of paired differences.
type Wilcoxon struct {
	// N is the number of non-zero differences ranked (zeros are dropped,
	// Wilcoxon's own treatment of them).
	N int `json:"n"`
	// Zeros counts the differences dropped for being zero.
	Zeros int `json:"zeros"`
	// WPlus is the sum of the ranks of the positive differences (tied
	// absolute values share their average rank).
	WPlus float64 `json:"w_plus"`
	// Z is the normal approximation's statistic, (W+ − n(n+1)/4) / σ, with
	// σ² = n(n+1)(2n+1)/24 − Σ(t³ − t)/48 over the groups of t ties, and
	// no continuity correction.
	Z float64 `json:"z"`
	// P is the two-sided p-value of Z under the standard normal.
	P float64 `json:"p"`
}

// WilcoxonSignedRank tests whether paired differences are centred on zero:
// ranks of the absolute non-zero differences, average ranks for ties, the
// normal approximation with the tie correction and without a continuity
// correction (SciPy's wilcoxon(d, zero_method="wilcox", correction=False,
// method="approx")). It needs at least one non-zero difference; when every
// non-zero difference ties the variance is still positive.
func WilcoxonSignedRank(d []float64) (Wilcoxon, error) {
	var nz []float64
	w := Wilcoxon{}
	for _, x := range d {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return Wilcoxon{}, fmt.Errorf("%w: a difference of %v", ErrInput, x)
		}
		if x == 0 {
			w.Zeros++
			continue
		}
		nz = append(nz, x)
	}
	n := len(nz)
	if n == 0 {
		return Wilcoxon{}, fmt.Errorf("%w: a signed-rank test needs a non-zero difference, got %d zeros", ErrInput, w.Zeros)
	}
	idx := make([]int, n)
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(a, b int) int {
		x, y := math.Abs(nz[a]), math.Abs(nz[b])
		switch {
		case x < y:
			return -1
		case x > y:
			return 1
		}
		return 0
	})
	ties := 0.0
	for i := 0; i < n; {
		j := i
		for j+1 < n && math.Abs(nz[idx[j+1]]) == math.Abs(nz[idx[i]]) {
			j++
		}
		rank := float64(i+j+2) / 2 // ranks i+1 … j+1, averaged
		for k := i; k <= j; k++ {
			if nz[idx[k]] > 0 {
				w.WPlus += rank
			}
		}
		t := float64(j - i + 1)
		ties += t*t*t - t
		i = j + 1
	}
	fn := float64(n)
	w.N = n
	mean := fn * (fn + 1) / 4
	sd := math.Sqrt(fn*(fn+1)*(2*fn+1)/24 - ties/48)
	w.Z = (w.WPlus - mean) / sd
	w.P = math.Erfc(math.Abs(w.Z) / math.Sqrt2)
	return w, nil
}

// BootstrapMean is the 95% cluster bootstrap interval of a mean of values
// grouped in clusters (one per case): the paired bootstrap of the values
// against zero, so a mean and a paired difference are resampled by the
// same draws under the same seed.
func BootstrapMean(clusters [][]float64, resamples int, seed uint64) (Interval, error) {
	pairs := make([][]Pair, len(clusters))
	for i, cl := range clusters {
		for _, v := range cl {
			pairs[i] = append(pairs[i], Pair{A: v})
		}
	}
	d, err := PairedBootstrap(pairs, resamples, seed)
	if err != nil {
		return Interval{}, err
	}
	return d.Interval, nil
}
