package stats

import (
	"fmt"
	"math"
)

// ClusteredSE returns the mean of scores grouped in clusters (one cluster
// per case, its trials as scores) and the cluster-robust standard error of
// that mean. Trials of one case are not independent, so the ordinary
// standard error understates the uncertainty when a case is tried more than
// once. This is the CR1 sandwich estimator of the mean, as an ordinary
// least-squares fit on a constant with clustered errors (what Stata's
// regress y, vce(cluster case) reports):
//
//	SE = √( G/(G−1) · Σ_g (Σ_{i∈g} (s_i − mean))² ) / N
//
// with G non-empty clusters and N scores. With one score per cluster it is
// the ordinary standard error √(s²/N), s² the sample variance. It needs at
// least two non-empty clusters.
func ClusteredSE(clusters [][]float64) (mean, se float64, err error) {
	g, n, sum := 0, 0, 0.0
	for _, cl := range clusters {
		if len(cl) > 0 {
			g++
		}
		for _, s := range cl {
			n++
			sum += s
		}
	}
	if g < 2 {
		return 0, 0, fmt.Errorf("%w: a clustered standard error needs at least 2 non-empty clusters, got %d", ErrInput, g)
	}
	mean = sum / float64(n)
	meat := 0.0
	for _, cl := range clusters {
		u := 0.0
		for _, s := range cl {
			u += s - mean
		}
		meat += u * u
	}
	gf := float64(g)
	return mean, math.Sqrt(gf/(gf-1)*meat) / float64(n), nil
}
