package stats

import "math"

// PairedSequence is an anytime-valid confidence sequence for the mean
// paired difference of two binary outcomes (B − A per pair, each −1, 0 or
// 1): its intervals cover the true difference at every number of pairs at
// once with probability at least 1 − Alpha, so a suite may look after every
// pair and stop as soon as the interval excludes zero without inflating its
// error rate. A fixed-sample interval checked after every pair would not:
// optional stopping makes it exclude zero far more often than its level
// says (TestRepeatedFixedSampleTestsAreNotAnytimeValid shows how often).
//
// It is the hedged betting confidence sequence of Waudby-Smith and Ramdas
// (2023, "Estimating means of bounded random variables by betting", JRSS-B)
// for the mean of X = (D + 1)/2 in [0, 1], with their predictable plug-in
// bets, with each bound found by a grid scan refined by bisection. The zero value is not
// usable: build it with NewPairedSequence.
type PairedSequence struct {
	// Alpha is the error level (0.05 for 95% confidence).
	Alpha float64

	xs      []float64 // each pair's X
	lambdas []float64 // the bet placed on it, before truncation
	sum     float64   // Σ X
	sqdev   float64   // Σ (X_i − μ̂_{i−1})²
}

// betCap bounds each bet to this fraction of what keeps the wealth
// positive, as the paper's truncation at 1/2 or 3/4 does.
const betCap = 0.75

// NewPairedSequence returns an empty sequence at level alpha (in (0, 1)).
func NewPairedSequence(alpha float64) *PairedSequence {
	if !(alpha > 0 && alpha < 1) {
		panic("stats: NewPairedSequence: alpha must lie in (0, 1)")
	}
	return &PairedSequence{Alpha: alpha}
}

// Pairs returns how many pairs were added.
func (s *PairedSequence) Pairs() int { return len(s.xs) }

// Add folds one pair's difference d (B − A: −1, 0 or 1; other values are
// clamped to [−1, 1]).
func (s *PairedSequence) Add(d float64) {
	x := (math.Max(-1, math.Min(1, d)) + 1) / 2
	t := float64(len(s.xs) + 1)
	// The bet on this pair uses only earlier pairs (it is predictable),
	// with the mean and variance estimates shrunk towards 1/2 and 1/4.
	mu := (0.5 + s.sum) / t
	sigma2 := (0.25 + s.sqdev) / t
	s.lambdas = append(s.lambdas, math.Sqrt(2*math.Log(2/s.Alpha)/(sigma2*t*math.Log(t+1))))
	s.xs = append(s.xs, x)
	s.sqdev += (x - mu) * (x - mu)
	s.sum += x
}

// excluded reports whether mean m of X is outside the sequence: the hedged
// wealth of a bettor against it, max(K⁺/2, K⁻/2), reached 1/Alpha.
func (s *PairedSequence) excluded(m float64) bool {
	var plus, minus float64
	capPlus, capMinus := betCap/math.Max(m, 1e-12), betCap/math.Max(1-m, 1e-12)
	for i, x := range s.xs {
		l := s.lambdas[i]
		plus += math.Log1p(math.Min(l, capPlus) * (x - m))
		minus += math.Log1p(-math.Min(l, capMinus) * (x - m))
	}
	bound := math.Log(2 / s.Alpha)
	return plus >= bound || minus >= bound
}

// sequenceGrid is how many candidate means Interval scans before it
// refines each bound by bisection.
const sequenceGrid = 400

// Interval returns the current interval for the mean difference, in
// [−1, 1], its bounds resolved to 1e-6. Before any pair it is [−1, 1].
func (s *PairedSequence) Interval() (lo, hi float64) {
	if len(s.xs) == 0 {
		return -1, 1
	}
	first, last := -1, -1
	for i := 0; i <= sequenceGrid; i++ {
		if !s.excluded(float64(i) / sequenceGrid) {
			if first < 0 {
				first = i
			}
			last = i
		}
	}
	if first < 0 {
		// The set is narrower than the grid's step: it holds the mean
		// observed so far.
		m := s.sum / float64(len(s.xs))
		return 2*m - 1, 2*m - 1
	}
	in, out := float64(first)/sequenceGrid, float64(first-1)/sequenceGrid
	if first > 0 {
		in = s.bisect(in, out)
	}
	loM := in
	in, out = float64(last)/sequenceGrid, float64(last+1)/sequenceGrid
	if last < sequenceGrid {
		in = s.bisect(in, out)
	}
	return 2*loM - 1, 2*in - 1
}

// bisect narrows the boundary between in (inside the set) and out.
func (s *PairedSequence) bisect(in, out float64) float64 {
	for math.Abs(in-out) > 5e-7 {
		mid := (in + out) / 2
		if s.excluded(mid) {
			out = mid
		} else {
			in = mid
		}
	}
	return in
}

// ExcludesZero reports whether the interval lies wholly on one side of no
// difference.
func (s *PairedSequence) ExcludesZero() bool { return s.excluded(0.5) }

// Within reports whether the interval lies strictly inside (−margin,
// margin): the two treatments are equivalent to within margin.
func (s *PairedSequence) Within(margin float64) bool {
	lo, hi := s.Interval()
	return lo > -margin && hi < margin
}
