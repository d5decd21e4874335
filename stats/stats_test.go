package stats

import (
	"errors"
	"math"
	"testing"
)

// Reference values come from testdata/reference.py (exact fractions, or
// mpmath at 50 significant digits); run it to see where each comes from.
// Agreement is required to 1e-9 unless a test says otherwise.
const tol = 1e-9

func near(a, b, eps float64) bool { return math.Abs(a-b) <= eps }

func TestZ95(t *testing.T) {
	// mpmath: sqrt(2)·erfinv(0.95) = 1.9599639845400542355…
	if !near(Z95, 1.9599639845400542355, 1e-15) {
		t.Fatalf("Z95 = %.17g", Z95)
	}
}

// The textbook examples of the Wilson score interval: Newcombe (1998), "Two-
// sided confidence intervals for the single proportion: comparison of seven
// methods", Statistics in Medicine 17:857–872, Table II, method 3 (score
// method without continuity correction), printed to four decimals.
func TestWilsonTextbook(t *testing.T) {
	for _, c := range []struct {
		x, n   int
		lo, hi float64
	}{
		{81, 263, 0.2553, 0.3662},
		{15, 148, 0.0624, 0.1605},
		{0, 20, 0.0000, 0.1611},
		{1, 29, 0.0061, 0.1718},
	} {
		iv, err := Wilson(c.x, c.n, Z95)
		if err != nil {
			t.Fatal(err)
		}
		if !near(iv.Lo, c.lo, 5e-5) || !near(iv.Hi, c.hi, 5e-5) {
			t.Errorf("%d/%d: [%.6f, %.6f], Newcombe prints [%.4f, %.4f]", c.x, c.n, iv.Lo, iv.Hi, c.lo, c.hi)
		}
	}
}

func TestWilsonReference(t *testing.T) {
	for _, c := range []struct {
		x, n   int
		lo, hi float64
	}{
		{81, 263, 0.25528851987827423, 0.36620957698280007},
		{15, 148, 0.06238639953073628, 0.16048724172330804},
		{0, 20, 0, 0.16112515805281939},
		{1, 29, 0.0061132142927626605, 0.17175521879320288},
		{7, 10, 0.39677814746114532, 0.89220873259369898},
		{29, 30, 0.83329609008590826, 0.99409140961838755},
		{50, 50, 0.92865240086664127, 1},
		{1, 1, 0.20654931437723739, 1},
	} {
		iv, err := Wilson(c.x, c.n, Z95)
		if err != nil {
			t.Fatal(err)
		}
		if !near(iv.Lo, c.lo, tol) || !near(iv.Hi, c.hi, tol) {
			t.Errorf("%d/%d: [%.17g, %.17g], want [%.17g, %.17g]", c.x, c.n, iv.Lo, iv.Hi, c.lo, c.hi)
		}
	}
	// The ends are exact, not a rounding error away.
	if iv, _ := Wilson(0, 20, Z95); iv.Lo != 0 {
		t.Errorf("0 of 20: lower bound %g, want exactly 0", iv.Lo)
	}
	if iv, _ := Wilson(50, 50, Z95); iv.Hi != 1 {
		t.Errorf("50 of 50: upper bound %g, want exactly 1", iv.Hi)
	}
	for _, bad := range [][2]int{{0, 0}, {-1, 5}, {6, 5}} {
		if _, err := Wilson(bad[0], bad[1], Z95); !errors.Is(err, ErrInput) {
			t.Errorf("Wilson(%d, %d): %v", bad[0], bad[1], err)
		}
	}
}

// McNemar's exact test. The textbook example is Fagerland, Lydersen and
// Laake (2013), "The McNemar test for binary matched-pairs data: mid-p and
// asymptotic are better than exact conditional", BMC Medical Research
// Methodology 13:91: airway hyper-responsiveness before and after stem cell
// transplantation, 1 and 7 discordant pairs, exact conditional p = 0.070.
func TestMcNemarExact(t *testing.T) {
	p, err := McNemarExact(1, 7)
	if err != nil || !near(p, 0.070, 5e-4) {
		t.Fatalf("Fagerland et al.: p = %v (%v), the paper prints 0.070", p, err)
	}
	for _, c := range []struct {
		b, c int
		p    float64
	}{
		{1, 7, 0.0703125},      // 9/128
		{3, 0, 0.25},           // 1/4
		{10, 2, 0.03857421875}, // 79/2048
		{5, 5, 1},
		{0, 0, 1},
		{12, 30, 0.0079158973348967265},
		{40, 60, 0.056887933640980792},
		{0, 25, 5.9604644775390625e-8},
	} {
		got, err := McNemarExact(c.b, c.c)
		if err != nil || !near(got, c.p, tol) {
			t.Errorf("McNemarExact(%d, %d) = %.17g (%v), want %.17g", c.b, c.c, got, err, c.p)
		}
		if sym, _ := McNemarExact(c.c, c.b); sym != got {
			t.Errorf("McNemarExact is not symmetric at (%d, %d)", c.b, c.c)
		}
	}
	// Small counts are summed exactly: 3 of 3 discordant pairs is 1/4, not
	// a rounding error away from it.
	if p, _ := McNemarExact(3, 0); p != 0.25 {
		t.Errorf("McNemarExact(3, 0) = %.17g, want exactly 0.25", p)
	}
	// The log-space sum used past the exact limit agrees with the exact one.
	exact, _ := McNemarExact(1000, 1048)
	if got := mcnemarLog(2048, 1000); !near(got, exact, 1e-12) {
		t.Errorf("log space %.17g vs exact %.17g", got, exact)
	}
	// Far past where 2^-n underflows, the log-space sum still works.
	if p, err := McNemarExact(1000, 1000); err != nil || p != 1 {
		t.Errorf("1000 vs 1000: %v, %v", p, err)
	}
	if p, err := McNemarExact(600, 1400); err != nil || p < 0 || p > 1e-60 {
		t.Errorf("600 vs 1400: %v, %v", p, err)
	}
	if _, err := McNemarExact(-1, 2); !errors.Is(err, ErrInput) {
		t.Error("a negative count was accepted")
	}
}

// pass@k against the closed form 1 − C(n−c,k)/C(n,k), evaluated exactly.
func TestPassAtK(t *testing.T) {
	for _, c := range []struct {
		n, c, k int
		want    float64
	}{
		{10, 3, 1, 0.3},
		{10, 3, 5, 0.91666666666666667}, // 1 − 21/252
		{10, 0, 3, 0},
		{10, 10, 3, 1},
		{5, 2, 4, 1},
		{200, 13, 10, 0.49755111473060613},
		{3, 1, 2, 0.66666666666666667},
		{100, 50, 100, 1},
	} {
		got, err := PassAtK(c.n, c.c, c.k)
		if err != nil || !near(got, c.want, tol) {
			t.Errorf("pass@%d(n=%d, c=%d) = %.17g (%v), want %.17g", c.k, c.n, c.c, got, err, c.want)
		}
	}
	// pass@1 is the plain pass rate.
	for c := 0; c <= 7; c++ {
		if got, _ := PassAtK(7, c, 1); !near(got, float64(c)/7, 1e-15) {
			t.Errorf("pass@1 with %d of 7 = %v", c, got)
		}
	}
	for _, bad := range [][3]int{{0, 0, 1}, {5, 6, 1}, {5, 2, 0}, {5, 2, 6}, {5, -1, 1}} {
		if _, err := PassAtK(bad[0], bad[1], bad[2]); !errors.Is(err, ErrInput) {
			t.Errorf("PassAtK%v accepted", bad)
		}
	}
}

func TestClusteredSE(t *testing.T) {
	for _, c := range []struct {
		clusters [][]float64
		mean, se float64
	}{
		{[][]float64{{1, 1, 0}, {0, 0, 0}, {1, 1, 1}, {1, 0, 0}}, 0.5, 0.2151657414559676},
		{[][]float64{{1, 0}, {1, 1, 1, 0}, {0}, {0, 0, 1}}, 0.5, 0.1414213562373095},
	} {
		m, se, err := ClusteredSE(c.clusters)
		if err != nil || !near(m, c.mean, tol) || !near(se, c.se, tol) {
			t.Errorf("%v: mean %.17g se %.17g (%v), want %.17g %.17g", c.clusters, m, se, err, c.mean, c.se)
		}
	}
	// With one score per cluster it is the ordinary standard error of the
	// mean, √(s²/n) with the sample variance s².
	scores := []float64{1, 0, 1, 1, 0, 1, 1, 1, 0, 1}
	var cl [][]float64
	mean := 0.0
	for _, s := range scores {
		cl = append(cl, []float64{s})
		mean += s / float64(len(scores))
	}
	ss := 0.0
	for _, s := range scores {
		ss += (s - mean) * (s - mean)
	}
	want := math.Sqrt(ss / float64(len(scores)-1) / float64(len(scores)))
	if _, se, _ := ClusteredSE(cl); !near(se, want, 1e-15) {
		t.Errorf("singleton clusters: %v, ordinary SE %v", se, want)
	}
	// Perfectly correlated trials carry one case's worth of information:
	// the clustered SE is larger than the naive one.
	corr := [][]float64{{1, 1, 1}, {0, 0, 0}, {1, 1, 1}, {0, 0, 0}}
	flat := [][]float64{{1}, {1}, {1}, {0}, {0}, {0}, {1}, {1}, {1}, {0}, {0}, {0}}
	_, seC, _ := ClusteredSE(corr)
	_, seF, _ := ClusteredSE(flat)
	if !(seC > 1.5*seF) {
		t.Errorf("clustered %v should exceed naive %v for correlated trials", seC, seF)
	}
	if _, _, err := ClusteredSE([][]float64{{1, 0, 1}, {}}); !errors.Is(err, ErrInput) {
		t.Error("one non-empty cluster was accepted")
	}
}

// The generator is SplitMix64 exactly: its published test vector (seed
// 1234567) and a second implementation in testdata/reference.py agree.
func TestSplitMix64(t *testing.T) {
	r := splitMix64{1234567}
	for i, want := range []uint64{6457827717110365317, 3203168211198807973, 9817491932198370423, 4593380528125082431, 16408922859458223821} {
		if got := r.next(); got != want {
			t.Fatalf("output %d = %d, want %d", i, got, want)
		}
	}
	// below stays in range and reaches every value.
	seen := map[uint64]bool{}
	for range 1000 {
		v := r.below(7)
		if v >= 7 {
			t.Fatalf("below(7) = %d", v)
		}
		seen[v] = true
	}
	if len(seen) != 7 {
		t.Fatalf("below(7) reached only %v", seen)
	}
}

var bootExample = [][]Pair{
	{{1, 0}},
	{{0, 0}, {0, 1}},
	{{1, 1}, {1, 1}, {1, 0}},
	{{1, 0}, {0, 0}, {1, 0}, {1, 0}},
	{{0, 1}, {1, 1}, {1, 1}, {0, 0}, {1, 0}},
	{{1, 0}, {1, 0}, {0, 1}, {1, 1}, {1, 0}, {0, 0}},
	{{0, 0}, {1, 1}},
}

func TestPairedBootstrapReference(t *testing.T) {
	for _, c := range []struct {
		resamples   int
		seed        uint64
		est, lo, hi float64
	}{
		{DefaultResamples, DefaultSeed, 0.2608695652173913, 0, 0.52173913043478259},
		{999, 7, 0.2608695652173913, 0, 0.54166666666666663},
	} {
		d, err := PairedBootstrap(bootExample, c.resamples, c.seed)
		if err != nil {
			t.Fatal(err)
		}
		if !near(d.Estimate, c.est, tol) || !near(d.Interval.Lo, c.lo, tol) || !near(d.Interval.Hi, c.hi, tol) {
			t.Errorf("seed %d: %+v, want %v [%v, %v]", c.seed, d, c.est, c.lo, c.hi)
		}
		if d.Pairs != 23 || d.Clusters != 7 || d.Resamples != c.resamples || d.Seed != c.seed {
			t.Errorf("bookkeeping: %+v", d)
		}
	}
}

func TestPairedBootstrapProperties(t *testing.T) {
	a, _ := PairedBootstrap(bootExample, 2000, 99)
	b, _ := PairedBootstrap(bootExample, 2000, 99)
	if a != b {
		t.Fatalf("the same seed gave %+v and %+v", a, b)
	}
	// Identical treatments differ by exactly nothing, in every resample.
	same := [][]Pair{{{1, 1}, {0, 0}}, {{1, 1}}, {{0, 0}, {0, 0}, {1, 1}}}
	if d, _ := PairedBootstrap(same, 500, 1); d.Estimate != 0 || d.Interval != (Interval{}) {
		t.Errorf("identical treatments: %+v", d)
	}
	// With many independent pairs the percentile interval approaches the
	// normal one, estimate ± 1.96·SE.
	var many [][]Pair
	for i := range 400 {
		many = append(many, []Pair{{A: float64((i * 7 % 10) / 4 % 2), B: float64((i * 3 % 10) / 6 % 2)}})
	}
	d, _ := PairedBootstrap(many, DefaultResamples, DefaultSeed)
	var diffs []float64
	for _, cl := range many {
		diffs = append(diffs, cl[0].A-cl[0].B)
	}
	ss := 0.0
	for _, x := range diffs {
		ss += (x - d.Estimate) * (x - d.Estimate)
	}
	se := math.Sqrt(ss / float64(len(diffs)-1) / float64(len(diffs)))
	if !near(d.Interval.Lo, d.Estimate-Z95*se, 0.01) || !near(d.Interval.Hi, d.Estimate+Z95*se, 0.01) {
		t.Errorf("bootstrap [%v, %v] vs normal [%v, %v]", d.Interval.Lo, d.Interval.Hi, d.Estimate-Z95*se, d.Estimate+Z95*se)
	}
	if _, err := PairedBootstrap([][]Pair{{}, nil}, 10, 1); !errors.Is(err, ErrInput) {
		t.Error("no pairs accepted")
	}
}

func TestQuantileType7(t *testing.T) {
	xs := []float64{1, 2, 3, 4, 10}
	// R: quantile(c(1,2,3,4,10), c(0, .1, .5, .9, 1)) = 1.0 1.4 3.0 7.6 10.0
	for q, want := range map[float64]float64{0: 1, 0.1: 1.4, 0.5: 3, 0.9: 7.6, 1: 10} {
		if got := Quantile(xs, q); !near(got, want, 1e-12) {
			t.Errorf("Quantile(%v) = %v, want %v", q, got, want)
		}
	}
}

// Tokens of two treatments on the same (case, trial) pairs, as in
// testdata/reference.py's usage example.
var ratioExample = [][]Pair{
	{{1200, 1500}, {1100, 1600}},
	{{900, 900}},
	{{3000, 4200}, {2800, 4100}, {2900, 3900}},
	{{500, 650}},
	{{2000, 1800}, {2100, 2500}},
	{{700, 1000}, {650, 1000}, {800, 950}},
}

func TestPairedRatioReference(t *testing.T) {
	for _, c := range []struct {
		resamples   int
		seed        uint64
		est, lo, hi float64
	}{
		{DefaultResamples, DefaultSeed, -0.22614107883817428, -0.28031496062992128, -0.088319088319088315},
		{999, 7, -0.22614107883817428, -0.2806534639056199, -0.096428571428571433},
	} {
		r, err := PairedRatio(ratioExample, c.resamples, c.seed)
		if err != nil {
			t.Fatal(err)
		}
		if r.Interval == nil || !near(r.Estimate, c.est, tol) || !near(r.Interval.Lo, c.lo, tol) || !near(r.Interval.Hi, c.hi, tol) {
			t.Errorf("seed %d: %+v (interval %v), want %v [%v, %v]", c.seed, r, r.Interval, c.est, c.lo, c.hi)
		}
		if r.Pairs != 12 || r.Clusters != 6 || r.Resamples != c.resamples || r.Seed != c.seed || r.ZeroTotals != 0 {
			t.Errorf("bookkeeping: %+v", r)
		}
	}
}

// The relative difference resamples the same cases as the difference of
// means with the same seed: both intervals come from one set of draws.
func TestPairedRatioDrawsAsThePairedBootstrap(t *testing.T) {
	// With B a constant 1 per pair and every cluster one pair, ΣA/ΣB − 1
	// is mean(A) − 1 and mean(A) − mean(B) is mean(A) − 1 too.
	var cls [][]Pair
	for i := range 9 {
		cls = append(cls, []Pair{{A: float64(i % 4), B: 1}})
	}
	r, err := PairedRatio(cls, 2000, 5)
	if err != nil {
		t.Fatal(err)
	}
	d, err := PairedBootstrap(cls, 2000, 5)
	if err != nil {
		t.Fatal(err)
	}
	if !near(r.Estimate, d.Estimate, 1e-12) || !near(r.Interval.Lo, d.Interval.Lo, 1e-12) || !near(r.Interval.Hi, d.Interval.Hi, 1e-12) {
		t.Fatalf("ratio %+v %v, difference %+v", r, r.Interval, d)
	}
}

// ΣB = 0 has no relative difference; a resample whose B total is 0 leaves
// the interval undefined rather than dropping that resample.
func TestPairedRatioUndefined(t *testing.T) {
	if _, err := PairedRatio([][]Pair{{{1, 0}}, {{2, 0}}}, 100, 1); !errors.Is(err, ErrInput) {
		t.Errorf("a zero B total gave %v", err)
	}
	if _, err := PairedRatio([][]Pair{{}, nil}, 100, 1); !errors.Is(err, ErrInput) {
		t.Errorf("no pairs gave %v", err)
	}
	r, err := PairedRatio([][]Pair{{{1, 0}}, {{2, 4}}}, 200, 1)
	if err != nil {
		t.Fatal(err)
	}
	if !near(r.Estimate, -0.25, 1e-12) || r.Interval != nil || r.ZeroTotals == 0 || r.ZeroTotals == 200 {
		t.Errorf("a resample with B total 0: %+v (interval %v)", r, r.Interval)
	}
	same, _ := PairedRatio([][]Pair{{{5, 5}, {3, 3}}, {{7, 7}}}, 300, 2)
	if same.Estimate != 0 || same.Interval == nil || *same.Interval != (Interval{}) {
		t.Errorf("identical usage: %+v", same)
	}
}
