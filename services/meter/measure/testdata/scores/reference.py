"""Reference values for the meter's score statistics (issue 34), computed
independently of the Go code: numpy and scipy from Debian's packages
(python3-numpy, python3-scipy). Shares no code with the meter. Reads
suites.json and writes reference.json; run it from this directory:

    /usr/bin/python3 reference.py

Per suite and treatment: the mean of the scorer's values (raw mapped onto
[0, 1] by its scale) over graded attempts (passed or failed), the CR1
cluster-robust standard error of that mean (an OLS fit on a constant with
errors clustered by case, the sandwich written out with numpy matrices),
and the 95% cluster bootstrap interval under the meter's seed rule. Per
suite: the paired difference a - b over (case, trial) pairs with a value
under both, its cluster bootstrap interval, and scipy's Wilcoxon
signed-rank test of the cases' mean differences.

The bootstrap is the one part that must repeat the meter's draws, so it is
written out here from the published descriptions of SplitMix64 (Steele,
Lea and Flood 2014), Lemire's multiply-shift with rejection (2019) and the
Hyndman-Fan type 7 quantile, and checked against numpy's quantile.
"""
import json
import warnings

import numpy as np
from scipy import stats

SEED = 20260601
RESAMPLES = 10000
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
            t = (-n) % n
            while lo < t:
                m = self.next() * n
                lo = m & M64
        return m >> 64


def bootstrap(cluster_diffs):
    """cluster_diffs: per cluster, the list of (a - b) differences, in the
    order the meter meets them. Returns the sorted resampled means."""
    sums = []
    for c in cluster_diffs:
        s = 0.0
        for d in c:
            s += d
        sums.append(s)
    counts = [len(c) for c in cluster_diffs]
    r = SplitMix64(SEED)
    g = len(cluster_diffs)
    out = []
    for _ in range(RESAMPLES):
        d, n = 0.0, 0
        for _ in range(g):
            j = r.below(g)
            d += sums[j]
            n += counts[j]
        out.append(d / n)
    out.sort()
    return out


def quantile7(xs, q):
    h = (len(xs) - 1) * q
    lo = int(h)
    if lo >= len(xs) - 1:
        return xs[-1]
    return xs[lo] + (h - lo) * (xs[lo + 1] - xs[lo])


def interval(sorted_stats):
    """The 2.5% and 97.5% type 7 quantiles, as the meter computes them (so
    the interval can be compared bit for bit), checked against numpy's."""
    lo, hi = quantile7(sorted_stats, 0.025), quantile7(sorted_stats, 0.975)
    nlo, nhi = np.quantile(np.array(sorted_stats), [0.025, 0.975], method="linear")
    assert abs(lo - nlo) < 1e-12 and abs(hi - nhi) < 1e-12
    return lo, hi


def cr1(clusters):
    y = np.concatenate([np.array(c, dtype=float) for c in clusters])
    X = np.ones((len(y), 1))
    bread = np.linalg.inv(X.T @ X)
    beta = bread @ X.T @ y
    u = y - X @ beta
    meat = np.zeros((1, 1))
    i = 0
    for c in clusters:
        Xg, ug = X[i:i + len(c)], u[i:i + len(c)]
        meat += Xg.T @ np.outer(ug, ug) @ Xg
        i += len(c)
    G = len(clusters)
    V = G / (G - 1) * bread @ meat @ bread
    return float(beta[0]), float(np.sqrt(V[0, 0]))


def value(a, sc):
    return (a["raw"] - sc["min"]) / (sc["max"] - sc["min"])


def graded(a):
    return a["outcome"] in ("passed", "failed")


def treatment(suite, t):
    sc = suite["scorer"]
    per_case, missing = {}, 0
    for a in suite["attempts"]:
        if a["treatment"] != t or not graded(a):
            continue
        if a["raw"] is None:
            missing += 1
            continue
        per_case.setdefault(a["case"], []).append(value(a, sc))
    clusters = list(per_case.values())
    mean, se = cr1(clusters)
    boot = bootstrap(clusters)
    lo, hi = interval(boot)
    return {"values": sum(len(c) for c in clusters), "missing": missing, "clusters": len(clusters),
            "mean": float(np.mean(np.concatenate(clusters))), "cr1_mean": mean, "se": se, "lo": lo, "hi": hi}


def paired(suite):
    sc = suite["scorer"]
    b = {(a["case"], a["trial"]): value(a, sc) for a in suite["attempts"]
         if a["treatment"] == "b" and graded(a) and a["raw"] is not None}
    per_case = {}
    for a in suite["attempts"]:
        if a["treatment"] != "a" or not graded(a) or a["raw"] is None:
            continue
        k = (a["case"], a["trial"])
        if k in b:
            per_case.setdefault(a["case"], []).append((value(a, sc), b[k]))
    pairs = [p for c in per_case.values() for p in c]
    A, B = np.array([p[0] for p in pairs]), np.array([p[1] for p in pairs])
    diffs = [[x - y for x, y in c] for c in per_case.values()]
    lo, hi = interval(bootstrap(diffs))
    case_d = np.array([np.mean(np.array(c)) for c in diffs])
    w = stats.wilcoxon(case_d, zero_method="wilcox", correction=False, alternative="two-sided", method="approx")
    nz = case_d[case_d != 0]
    ranks = stats.rankdata(np.abs(nz))
    n = len(nz)
    w_plus = float(ranks[nz > 0].sum())
    _, t = np.unique(np.abs(nz), return_counts=True)
    sd = np.sqrt(n * (n + 1) * (2 * n + 1) / 24 - (t**3 - t).sum() / 48)
    z = (w_plus - n * (n + 1) / 4) / sd
    assert abs(2 * stats.norm.sf(abs(z)) - w.pvalue) < 1e-12
    return {"pairs": len(pairs), "clusters": len(per_case), "mean_a": float(A.mean()), "mean_b": float(B.mean()),
            "estimate": float((A - B).mean()), "lo": lo, "hi": hi,
            "wilcoxon": {"n": n, "zeros": int((case_d == 0).sum()), "w_plus": w_plus, "z": float(z), "p": float(w.pvalue)}}


# scipy warns that the normal approximation is rough for few cases: the
# meter uses the same approximation, and says so in docs/report.md.
warnings.filterwarnings("ignore", message="Sample size too small")
out = []
for s in json.load(open("suites.json")):
    out.append({"name": s["name"], "a": treatment(s, "a"), "b": treatment(s, "b"), "paired": paired(s)})
json.dump(out, open("reference.json", "w"), indent=1)
print(json.dumps(out, indent=1))
