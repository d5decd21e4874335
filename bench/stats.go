package bench

import (
	"slices"
	"time"
)

// Sample is one figure measured in several repetitions.
type Sample []float64

// Median is the middle value (the mean of the two middle values for an
// even count); 0 for no values.
func (s Sample) Median() float64 {
	if len(s) == 0 {
		return 0
	}
	v := slices.Sorted(slices.Values(s))
	n := len(v)
	if n%2 == 1 {
		return v[n/2]
	}
	return (v[n/2-1] + v[n/2]) / 2
}

// Spread is the smallest and the largest value.
func (s Sample) Spread() (lo, hi float64) {
	if len(s) == 0 {
		return 0, 0
	}
	return slices.Min(s), slices.Max(s)
}

// percentile returns the p-th percentile (0 < p <= 100) of durations by the
// nearest-rank method.
func percentile(d []time.Duration, p float64) time.Duration {
	if len(d) == 0 {
		return 0
	}
	v := slices.Sorted(slices.Values(d))
	rank := int(p/100*float64(len(v))+0.999999) - 1
	return v[min(max(rank, 0), len(v)-1)]
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
