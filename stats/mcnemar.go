package stats

import (
	"fmt"
	"math"
	"math/big"
)

// exactLimit is the largest number of discordant pairs for which the
// p-value is summed in exact rational arithmetic (and so correctly rounded);
// beyond it the sum is taken in log space, accurate to about 1e-13.
const exactLimit = 2048

// McNemarExact returns the two-sided p-value of McNemar's exact
// (conditional) test for paired binary outcomes, given the discordant
// counts: b pairs where only the first treatment passed, c where only the
// second did. Under the null the b+c discordant pairs split as a fair coin,
// so
//
//	p = min(1, 2 · Σ_{i=0}^{min(b,c)} C(b+c, i) / 2^(b+c))
//
// With no discordant pair there is no evidence either way and p is 1.
func McNemarExact(b, c int) (float64, error) {
	if b < 0 || c < 0 {
		return 0, fmt.Errorf("%w: mcnemar(%d, %d)", ErrInput, b, c)
	}
	n, k := b+c, min(b, c)
	if n == 0 {
		return 1, nil
	}
	if n <= exactLimit {
		sum, term := new(big.Int), big.NewInt(1) // term = C(n, i)
		for i := 0; i <= k; i++ {
			sum.Add(sum, term)
			term.Mul(term, big.NewInt(int64(n-i)))
			term.Quo(term, big.NewInt(int64(i+1)))
		}
		p := new(big.Rat).SetFrac(sum.Lsh(sum, 1), new(big.Int).Lsh(big.NewInt(1), uint(n)))
		f, _ := p.Float64()
		return math.Min(1, f), nil
	}
	return mcnemarLog(n, k), nil
}

// mcnemarLog sums the terms C(n,i)/2^n, i ≤ k ≤ n/2, in log space (2^-n
// underflows past n = 1074), relative to the largest, which is the last.
func mcnemarLog(n, k int) float64 {
	logs := make([]float64, k+1)
	lt := -float64(n) * math.Ln2
	for i := 0; i <= k; i++ {
		logs[i] = lt
		lt += math.Log(float64(n-i)) - math.Log(float64(i+1))
	}
	top := logs[k]
	sum := 0.0
	for _, l := range logs {
		sum += math.Exp(l - top)
	}
	return math.Min(1, 2*sum*math.Exp(top))
}
