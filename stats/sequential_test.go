package stats

import (
	"math"
	"math/rand/v2"
	"testing"
)

// simulateNull runs suites with no true difference (A and B pass with the
// same probability, independently per pair), looks after every pair up to
// maxPairs, and returns the fraction of suites whose check ever said there
// is a difference.
func simulateNull(suites, maxPairs int, seed uint64, differs func(pairs []float64) bool) float64 {
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	hits := 0
	for s := range suites {
		p := []float64{0.2, 0.5, 0.8}[s%3]
		var pairs []float64
		for range maxPairs {
			a, b := 0.0, 0.0
			if rng.Float64() < p {
				a = 1
			}
			if rng.Float64() < p {
				b = 1
			}
			pairs = append(pairs, b-a)
			if differs(pairs) {
				hits++
				break
			}
		}
	}
	return float64(hits) / float64(suites)
}

// Looked at after every pair, the sequence says "different" on a suite
// with no true difference no more often than its level allows: 600
// simulated suites of up to 150 pairs each, at the 5% level.
func TestTheSequenceKeepsItsErrorRateUnderOptionalStopping(t *testing.T) {
	const suites, maxPairs, alpha = 2000, 200, 0.05
	rate := simulateNull(suites, maxPairs, 20261201, func() func([]float64) bool {
		var s *PairedSequence
		return func(pairs []float64) bool {
			if len(pairs) == 1 {
				s = NewPairedSequence(alpha)
			}
			s.Add(pairs[len(pairs)-1])
			return s.ExcludesZero()
		}
	}())
	t.Logf("sequence: %.3f of %d null suites stopped for a difference (nominal %.2f)", rate, suites, alpha)
	if rate > alpha {
		t.Fatalf("error rate %.3f above the nominal %.2f", rate, alpha)
	}
}

// The contrast that makes the test above mean something: a fixed-sample
// z-test on the mean difference, checked after every pair, says
// "different" on null suites far more often than 5%.
func TestRepeatedFixedSampleTestsAreNotAnytimeValid(t *testing.T) {
	const suites, maxPairs, alpha = 2000, 200, 0.05
	rate := simulateNull(suites, maxPairs, 20261201, func(pairs []float64) bool {
		n := float64(len(pairs))
		if n < 10 {
			return false
		}
		var sum, sq float64
		for _, d := range pairs {
			sum += d
			sq += d * d
		}
		mean := sum / n
		sd := math.Sqrt((sq/n - mean*mean) * n / (n - 1))
		return sd > 0 && math.Abs(mean)/(sd/math.Sqrt(n)) > 1.96
	})
	t.Logf("repeated z-test: %.3f of %d null suites stopped for a difference", rate, suites)
	if rate <= 2*alpha {
		t.Fatalf("the repeated fixed-sample test erred on only %.3f of null suites; the simulation cannot tell valid from invalid", rate)
	}
}

// A real difference is found: B passes 80%, A 30%, and the sequence
// excludes zero on the side of B well within 100 pairs.
func TestTheSequenceFindsARealDifference(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	s := NewPairedSequence(0.05)
	for s.Pairs() < 100 && !s.ExcludesZero() {
		a, b := 0.0, 0.0
		if rng.Float64() < 0.3 {
			a = 1
		}
		if rng.Float64() < 0.8 {
			b = 1
		}
		s.Add(b - a)
	}
	lo, hi := s.Interval()
	if !s.ExcludesZero() || lo <= 0 || hi < lo {
		t.Fatalf("after %d pairs: interval [%.3f, %.3f], excludes zero %v", s.Pairs(), lo, hi, s.ExcludesZero())
	}
	t.Logf("difference found after %d pairs: [%.3f, %.3f]", s.Pairs(), lo, hi)
}

// Before any pair the interval is everything; identical outcomes narrow
// it around zero, and with enough of them equivalence within a margin
// holds.
func TestTiesNarrowTheIntervalAroundZero(t *testing.T) {
	s := NewPairedSequence(0.05)
	if lo, hi := s.Interval(); lo != -1 || hi != 1 {
		t.Fatalf("empty interval [%v, %v], want [-1, 1]", lo, hi)
	}
	for range 400 {
		s.Add(0)
	}
	lo, hi := s.Interval()
	if !(lo < 0 && hi > 0 && hi-lo < 0.5) || s.ExcludesZero() || !s.Within(0.25) {
		t.Fatalf("after 400 ties: [%.3f, %.3f], excludes zero %v, within 0.25 %v", lo, hi, s.ExcludesZero(), s.Within(0.25))
	}
}
