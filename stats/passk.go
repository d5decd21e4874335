package stats

import "fmt"

// PassAtK returns the unbiased estimator of pass@k (Chen et al. 2021,
// "Evaluating Large Language Models Trained on Code"): the probability that
// at least one of k trials drawn without replacement from n trials, c of
// which passed, passes:
//
//	pass@k = 1 − C(n−c, k) / C(n, k)
//
// computed as 1 − Π_{i=n−c+1}^{n} (1 − k/i), which never forms the large
// binomial coefficients. It needs 1 ≤ k ≤ n and 0 ≤ c ≤ n.
func PassAtK(n, c, k int) (float64, error) {
	if n <= 0 || c < 0 || c > n || k < 1 || k > n {
		return 0, fmt.Errorf("%w: pass@%d with %d of %d passing", ErrInput, k, c, n)
	}
	if n-c < k {
		return 1, nil
	}
	prod := 1.0
	for i := n - c + 1; i <= n; i++ {
		prod *= 1 - float64(k)/float64(i)
	}
	return 1 - prod, nil
}
