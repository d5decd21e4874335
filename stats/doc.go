// Package stats holds the meter stick's statistics as pure functions: the
// Wilson score interval of a proportion, McNemar's exact test for paired
// binary outcomes, the unbiased pass@k estimator, the case-clustered
// standard error of a mean, and a paired cluster bootstrap with a fixed,
// documented random source, of a difference of means and of a relative
// difference (ΣA/ΣB − 1). Nothing here does I/O or reads the clock; the
// same inputs always give the same outputs, bit for bit.
//
// The tests pin every function to reference values computed independently
// (testdata/reference.py: exact fractions, or mpmath at 50 digits) and, where
// a textbook prints an example, to the textbook's figures.
package stats

import "errors"

// ErrInput is returned for arguments outside a function's domain (negative
// counts, more successes than trials, k larger than n, no data).
var ErrInput = errors.New("stats: invalid input")

// Z95 is the two-sided 95% quantile of the standard normal distribution,
// Φ⁻¹(0.975), to double precision.
const Z95 = 1.959963984540054

// Interval is a two-sided confidence interval.
type Interval struct {
	Lo float64 `json:"lo"`
	Hi float64 `json:"hi"`
}
