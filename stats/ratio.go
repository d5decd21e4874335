package stats

import (
	"fmt"
	"slices"
)

// Ratio is a paired relative difference, ΣA/ΣB − 1 over paired figures
// (tokens, cost, turns, wall time of two treatments on the same case and
// trial), with its bootstrap interval: −0.14 says A used 14% less than B.
type Ratio struct {
	// Estimate is ΣA/ΣB − 1 over all pairs: the ratio of the mean figures,
	// so an attempt that spent more weighs more, as it does in a bill.
	Estimate float64 `json:"estimate"`
	// Interval is the 95% percentile interval of the resampled estimates;
	// nil when some resample's B total was 0 (ZeroTotals says how many),
	// where the ratio is undefined and dropping those resamples would
	// narrow the interval on data that does not support it.
	Interval   *Interval `json:"interval"`
	Pairs      int       `json:"pairs"`
	Clusters   int       `json:"clusters"`
	Resamples  int       `json:"resamples"`
	Seed       uint64    `json:"seed"`
	ZeroTotals int       `json:"zero_totals,omitempty"`
}

// PairedRatio estimates ΣA/ΣB − 1 over paired figures grouped in clusters
// (one per case) and its 95% interval by the paired cluster bootstrap of
// PairedBootstrap: the same draws (SplitMix64 seeded with seed, Lemire's
// reduction), each resample as many clusters as there are with
// replacement, all of a cluster's pairs together; the interval is the
// 2.5% and 97.5% percentiles of the resampled ratios (Hyndman–Fan type
// 7). With the same clusters, resamples and seed it resamples exactly the
// cases PairedBootstrap does. ΣB = 0, no pairs or no resamples are
// ErrInput.
func PairedRatio(clusters [][]Pair, resamples int, seed uint64) (Ratio, error) {
	var sa, sb []float64
	n := 0
	totalA, totalB := 0.0, 0.0
	for _, cl := range clusters {
		if len(cl) == 0 {
			continue
		}
		a, b := 0.0, 0.0
		for _, p := range cl {
			a += p.A
			b += p.B
		}
		sa, sb = append(sa, a), append(sb, b)
		totalA, totalB = totalA+a, totalB+b
		n += len(cl)
	}
	if n == 0 || resamples < 1 {
		return Ratio{}, fmt.Errorf("%w: paired ratio of %d pairs with %d resamples", ErrInput, n, resamples)
	}
	if totalB == 0 {
		return Ratio{}, fmt.Errorf("%w: paired ratio of %d pairs whose B total is 0", ErrInput, n)
	}
	out := Ratio{Estimate: totalA/totalB - 1, Pairs: n, Clusters: len(sa), Resamples: resamples, Seed: seed}
	r := splitMix64{seed}
	g := uint64(len(sa))
	ests := make([]float64, resamples)
	for k := range ests {
		a, b := 0.0, 0.0
		for range sa {
			j := r.below(g)
			a += sa[j]
			b += sb[j]
		}
		if b == 0 {
			out.ZeroTotals++
			continue
		}
		ests[k] = a/b - 1
	}
	if out.ZeroTotals > 0 {
		return out, nil
	}
	slices.Sort(ests)
	out.Interval = &Interval{Lo: Quantile(ests, 0.025), Hi: Quantile(ests, 0.975)}
	return out, nil
}
