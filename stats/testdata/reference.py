"""Reference values for the stats package, computed independently of the Go
code: exact rational arithmetic (fractions) where the quantity is rational,
and mpmath at 50 significant digits where it is not. Run with
`python3 stats/testdata/reference.py`; the Go tests hold its output.
"""
from fractions import Fraction
from math import comb
import mpmath as mp

mp.mp.dps = 50
Z = mp.sqrt(2) * mp.erfinv(mp.mpf("0.95"))  # the 0.975 normal quantile


def wilson(x, n):
    x, n = mp.mpf(x), mp.mpf(n)
    p = x / n
    d = 1 + Z**2 / n
    c = (p + Z**2 / (2 * n)) / d
    h = Z / d * mp.sqrt(p * (1 - p) / n + Z**2 / (4 * n**2))
    return c - h, c + h


def mcnemar_exact(b, c):
    n, k = b + c, min(b, c)
    if n == 0:
        return Fraction(1)
    p = 2 * Fraction(sum(comb(n, i) for i in range(k + 1)), 2**n)
    return min(p, Fraction(1))


def pass_at_k(n, c, k):
    return 1 - Fraction(comb(n - c, k), comb(n, k))


def clustered_se(clusters):
    # CR1 cluster-robust variance of a mean: OLS of the scores on a
    # constant, sandwich (X'X)^-1 (sum_g X_g' u_g u_g' X_g) (X'X)^-1 with the
    # small-sample factor G/(G-1). With X a column of ones this is the sum
    # of squared cluster residual totals over N^2.
    scores = [Fraction(s) for cl in clusters for s in cl]
    N, G = len(scores), len(clusters)
    mean = sum(scores) / N
    meat = sum((sum(Fraction(s) - mean for s in cl)) ** 2 for cl in clusters)
    bread = Fraction(1, N)  # (X'X)^-1
    v = Fraction(G, G - 1) * bread * meat * bread
    return mean, mp.sqrt(mp.mpf(v.numerator) / v.denominator)


print("Z95", mp.nstr(Z, 20))
for x, n in [(81, 263), (15, 148), (0, 20), (1, 29), (7, 10), (29, 30), (50, 50), (1, 1)]:
    lo, hi = wilson(x, n)
    print("wilson", x, n, mp.nstr(lo, 17), mp.nstr(hi, 17))
for b, c in [(1, 7), (3, 0), (10, 2), (5, 5), (0, 0), (12, 30), (40, 60), (0, 25)]:
    p = mcnemar_exact(b, c)
    print("mcnemar", b, c, p, mp.nstr(mp.mpf(p.numerator) / p.denominator, 17))
for n, c, k in [(10, 3, 1), (10, 3, 5), (10, 0, 3), (10, 10, 3), (5, 2, 4), (200, 13, 10), (3, 1, 2), (100, 50, 100)]:
    p = pass_at_k(n, c, k)
    print("passk", n, c, k, mp.nstr(mp.mpf(p.numerator) / p.denominator, 17))
for clusters in [
    [[1, 1, 0], [0, 0, 0], [1, 1, 1], [1, 0, 0]],
    [[1, 0], [1, 1, 1, 0], [0], [0, 0, 1]],
]:
    m, se = clustered_se(clusters)
    print("cluster", clusters, mp.nstr(mp.mpf(m.numerator) / m.denominator, 17), mp.nstr(se, 17))


# SplitMix64 and the paired cluster bootstrap, written out again from their
# published descriptions, so the Go implementation is checked against a
# second one.
M64 = (1 << 64) - 1


class SplitMix64:
    def __init__(self, seed):
        self.s = seed & M64

    def next(self):
        self.s = (self.s + 0x9E3779B97F4A7C15) & M64
        z = self.s
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M64
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M64
        return z ^ (z >> 31)

    def below(self, n):
        m = self.next() * n
        lo = m & M64
        if lo < n:
            t = ((1 << 64) - n) % n
            while lo < t:
                m = self.next() * n
                lo = m & M64
        return m >> 64


def quantile7(xs, q):
    h = (len(xs) - 1) * q
    lo = int(h)
    if lo >= len(xs) - 1:
        return xs[-1]
    return xs[lo] + (h - lo) * (xs[lo + 1] - xs[lo])


def paired_bootstrap(clusters, resamples, seed):
    cls = [c for c in clusters if c]
    diffs = [sum(a - b for a, b in c) for c in cls]
    counts = [len(c) for c in cls]
    r = SplitMix64(seed)
    stats = []
    for _ in range(resamples):
        d, n = 0, 0
        for _ in cls:
            j = r.below(len(cls))
            d += diffs[j]
            n += counts[j]
        stats.append(d / n)
    stats.sort()
    est = sum(diffs) / sum(counts)
    return est, quantile7(stats, 0.025), quantile7(stats, 0.975)


r = SplitMix64(1234567)
print("splitmix", [r.next() for _ in range(5)])
# Clusters of unequal size, so resampled estimates are ratios that take many
# values and the percentiles fall between order statistics.
example = [
    [(1, 0)],
    [(0, 0), (0, 1)],
    [(1, 1), (1, 1), (1, 0)],
    [(1, 0), (0, 0), (1, 0), (1, 0)],
    [(0, 1), (1, 1), (1, 1), (0, 0), (1, 0)],
    [(1, 0), (1, 0), (0, 1), (1, 1), (1, 0), (0, 0)],
    [(0, 0), (1, 1)],
]
print("bootstrap", "%.17g %.17g %.17g" % paired_bootstrap(example, 10000, 20260601))
print("bootstrap7", "%.17g %.17g %.17g" % paired_bootstrap(example, 999, 7))


def paired_ratio(clusters, resamples, seed):
    # The relative difference sum(A)/sum(B) - 1 of paired usage figures,
    # resampled by cluster with the same draws as paired_bootstrap.
    cls = [c for c in clusters if c]
    sa = [sum(a for a, _ in c) for c in cls]
    sb = [sum(b for _, b in c) for c in cls]
    r = SplitMix64(seed)
    stats = []
    for _ in range(resamples):
        x, y = 0, 0
        for _ in cls:
            j = r.below(len(cls))
            x += sa[j]
            y += sb[j]
        stats.append(Fraction(x, y) - 1)
    stats.sort()
    est = Fraction(sum(sa), sum(sb)) - 1
    lo, hi = quantile7(stats, 0.025), quantile7(stats, 0.975)
    return float(est), float(lo), float(hi)


# Tokens of two treatments on the same (case, trial) pairs: B spends more
# on most cases, and one case is a tie.
usage = [
    [(1200, 1500), (1100, 1600)],
    [(900, 900)],
    [(3000, 4200), (2800, 4100), (2900, 3900)],
    [(500, 650)],
    [(2000, 1800), (2100, 2500)],
    [(700, 1000), (650, 1000), (800, 950)],
]
print("ratio", "%.17g %.17g %.17g" % paired_ratio(usage, 10000, 20260601))
print("ratio7", "%.17g %.17g %.17g" % paired_ratio(usage, 999, 7))
