package stats

import (
	"fmt"
	"math/bits"
	"slices"
)

// Bootstrap defaults. The seed and the resample count are part of the
// method: a report states them, and the same data with the same seed always
// gives the same interval.
const (
	// DefaultResamples is the number of bootstrap resamples: enough that the
	// 2.5% and 97.5% percentiles move by well under a percentage point
	// between seeds on suites of tens of cases.
	DefaultResamples = 10000
	// DefaultSeed seeds the resampling.
	DefaultSeed uint64 = 20260601
)

// Pair is one paired observation: the scores of two treatments on the same
// case and trial (1 for a pass, 0 for a fail).
type Pair struct{ A, B float64 }

// Difference is a paired difference of means with its bootstrap interval.
type Difference struct {
	// Estimate is mean(A) − mean(B) over all pairs.
	Estimate float64 `json:"estimate"`
	// Interval is the 95% percentile interval of the bootstrap
	// distribution of the estimate.
	Interval  Interval `json:"interval"`
	Pairs     int      `json:"pairs"`
	Clusters  int      `json:"clusters"`
	Resamples int      `json:"resamples"`
	Seed      uint64   `json:"seed"`
}

// PairedBootstrap estimates mean(A) − mean(B) over paired observations
// grouped in clusters (one per case) and its 95% interval by a cluster
// bootstrap: each resample draws as many clusters as there are, with
// replacement, and takes all their pairs, so that correlated trials of one
// case move together. The interval is the 2.5% and 97.5% percentiles of the
// resampled estimates (linear interpolation between order statistics,
// Hyndman–Fan type 7). Draws come from SplitMix64 seeded with seed and
// reduced to an index by Lemire's multiply-shift with rejection, both
// implemented here so the sequence never depends on the Go release.
func PairedBootstrap(clusters [][]Pair, resamples int, seed uint64) (Difference, error) {
	var cls [][]Pair
	n, sum := 0, 0.0
	for _, cl := range clusters {
		if len(cl) == 0 {
			continue
		}
		cls = append(cls, cl)
		for _, p := range cl {
			n++
			sum += p.A - p.B
		}
	}
	if n == 0 || resamples < 1 {
		return Difference{}, fmt.Errorf("%w: paired bootstrap of %d pairs with %d resamples", ErrInput, n, resamples)
	}
	// Each cluster's contribution, so a resample is a sum over G draws.
	diffs := make([]float64, len(cls))
	counts := make([]int, len(cls))
	for i, cl := range cls {
		for _, p := range cl {
			diffs[i] += p.A - p.B
		}
		counts[i] = len(cl)
	}
	r := splitMix64{seed}
	g := uint64(len(cls))
	stats := make([]float64, resamples)
	for k := range stats {
		d, c := 0.0, 0
		for range cls {
			j := r.below(g)
			d += diffs[j]
			c += counts[j]
		}
		stats[k] = d / float64(c)
	}
	slices.Sort(stats)
	return Difference{
		Estimate:  sum / float64(n),
		Interval:  Interval{Lo: Quantile(stats, 0.025), Hi: Quantile(stats, 0.975)},
		Pairs:     n,
		Clusters:  len(cls),
		Resamples: resamples,
		Seed:      seed,
	}, nil
}

// Quantile returns the q-quantile of sorted values by linear interpolation
// between order statistics (Hyndman–Fan type 7, the default of R and
// NumPy): h = (n−1)q, x[⌊h⌋] + (h−⌊h⌋)(x[⌊h⌋+1] − x[⌊h⌋]).
func Quantile(sorted []float64, q float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	h := float64(len(sorted)-1) * q
	lo := int(h)
	if lo >= len(sorted)-1 {
		return sorted[len(sorted)-1]
	}
	return sorted[lo] + (h-float64(lo))*(sorted[lo+1]-sorted[lo])
}

// splitMix64 is Steele, Lea and Flood's SplitMix64 generator (2014).
type splitMix64 struct{ state uint64 }

func (s *splitMix64) next() uint64 {
	s.state += 0x9e3779b97f4a7c15
	z := s.state
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// below returns a uniform integer in [0, n), n > 0, by Lemire's
// multiply-shift with rejection ("Fast Random Integer Generation in an
// Interval", 2019).
func (s *splitMix64) below(n uint64) uint64 {
	hi, lo := bits.Mul64(s.next(), n)
	if lo < n {
		t := -n % n
		for lo < t {
			hi, lo = bits.Mul64(s.next(), n)
		}
	}
	return hi
}
