package measure

import (
	"fmt"

	"github.com/factline/factline/stats"
)

// UsageComparison compares what two treatments consumed, figure by
// figure, paired on case and trial: an ablation that saves tokens at the
// same pass rate says so, with an interval.
type UsageComparison struct {
	Tokens       *PairedUsage `json:"tokens"`
	InputTokens  *PairedUsage `json:"input_tokens"`
	OutputTokens *PairedUsage `json:"output_tokens"`
	Cost         *PairedUsage `json:"cost"`
	Turns        *PairedUsage `json:"turns"`
	// WallMillis is named for its unit, as the usage's wall_millis is:
	// the one comparison no two runs of a suite share.
	WallMillis *PairedUsage `json:"wall_millis"`
}

// PairedUsage is one figure of two treatments over the (case, trial)
// pairs where both attempts ended with an outcome the suite counts (not
// excluded) and the figure is known on both sides.
type PairedUsage struct {
	Unit string `json:"unit"`
	// Pairs counts the pairs used; LeftOut those where the figure is
	// unknown on a side: unknown is never taken for zero.
	Pairs   int `json:"pairs"`
	LeftOut int `json:"left_out"`
	// MeanA and MeanB are the figure per attempt over the pairs, in Unit.
	MeanA *float64 `json:"mean_a"`
	MeanB *float64 `json:"mean_b"`
	// Relative is ΣA/ΣB − 1 over the pairs with its paired cluster
	// bootstrap interval (the report's resamples and seed); nil when B's
	// total is 0. Its Interval is nil when Withheld says why.
	Relative *stats.Ratio `json:"relative"`
	Withheld string       `json:"withheld,omitempty"`
}

// figure reads one usage figure of an attempt row; false when unknown.
type figure func(AttemptRow) (float64, bool)

func u64Figure(get func(AttemptRow) *uint64) figure {
	return func(r AttemptRow) (float64, bool) {
		if v := get(r); v != nil {
			return float64(*v), true
		}
		return 0, false
	}
}

// usageFigures are the compared figures, in the order reports show them.
var usageFigures = []struct {
	unit string
	get  figure
	set  func(*UsageComparison, *PairedUsage)
}{
	{UnitTokens, u64Figure(func(r AttemptRow) *uint64 { return r.Tokens }), func(u *UsageComparison, p *PairedUsage) { u.Tokens = p }},
	{UnitTokens, u64Figure(func(r AttemptRow) *uint64 { return r.InputTokens }), func(u *UsageComparison, p *PairedUsage) { u.InputTokens = p }},
	{UnitTokens, u64Figure(func(r AttemptRow) *uint64 { return r.OutputTokens }), func(u *UsageComparison, p *PairedUsage) { u.OutputTokens = p }},
	{UnitCost, u64Figure(func(r AttemptRow) *uint64 { return r.Cost }), func(u *UsageComparison, p *PairedUsage) { u.Cost = p }},
	{UnitTurns, func(r AttemptRow) (float64, bool) {
		if r.Turns == nil {
			return 0, false
		}
		return float64(*r.Turns), true
	}, func(u *UsageComparison, p *PairedUsage) { u.Turns = p }},
	{UnitWall, u64Figure(func(r AttemptRow) *uint64 { return r.Millis }), func(u *UsageComparison, p *PairedUsage) { u.WallMillis = p }},
}

// spent says whether an attempt's usage enters the paired comparison: it
// ended, and not with an outcome the suite excludes (a harness error's
// usage says nothing of the agent).
func spent(r AttemptRow) bool { return r.Status != "" && r.Outcome != OutcomeExcluded }

// compareUsage pairs treatments a and b on case and trial and compares
// every usage figure; nil when no attempt pairs up.
func compareUsage(rows []AttemptRow, a, b string) *UsageComparison {
	type key struct {
		c string
		t uint32
	}
	bs := map[key]AttemptRow{}
	for _, r := range rows {
		if r.Treatment == b && spent(r) {
			bs[key{r.Case, r.Trial}] = r
		}
	}
	var pairs [][2]AttemptRow
	for _, r := range rows {
		if r.Treatment != a || !spent(r) {
			continue
		}
		if y, ok := bs[key{r.Case, r.Trial}]; ok {
			pairs = append(pairs, [2]AttemptRow{r, y})
		}
	}
	if len(pairs) == 0 {
		return nil
	}
	out := &UsageComparison{}
	for _, f := range usageFigures {
		f.set(out, pairFigure(pairs, f.unit, f.get))
	}
	return out
}

// pairFigure compares one figure over the pairs, clustered by case in the
// roster's order.
func pairFigure(pairs [][2]AttemptRow, unit string, get figure) *PairedUsage {
	p := &PairedUsage{Unit: unit}
	var cases byCase[stats.Pair]
	var sa, sb float64
	for _, pr := range pairs {
		x, okA := get(pr[0])
		y, okB := get(pr[1])
		if !okA || !okB {
			p.LeftOut++
			continue
		}
		cases.add(pr[0].Case, stats.Pair{A: x, B: y})
		p.Pairs++
		sa, sb = sa+x, sb+y
	}
	if p.Pairs == 0 {
		p.Withheld = "no pair has it known on both sides"
		return p
	}
	p.MeanA, p.MeanB = ptr(sa/float64(p.Pairs)), ptr(sb/float64(p.Pairs))
	if sb == 0 {
		p.Withheld = fmt.Sprintf("the relative difference: B's total is 0 %s", unit)
		return p
	}
	r, err := stats.PairedRatio(cases.clusters(), stats.DefaultResamples, stats.DefaultSeed)
	if err != nil {
		p.Withheld = "the relative difference: " + err.Error()
		return p
	}
	p.Relative = &r
	switch {
	case len(cases.order) < 2:
		// Resampling one case gives that case back every time.
		r.Interval = nil
		p.Withheld = fmt.Sprintf("the interval: the pairs come from %d case; a cluster bootstrap needs at least 2", len(cases.order))
	case r.ZeroTotals > 0:
		p.Withheld = fmt.Sprintf("the interval: %d of %d resamples have a B total of 0", r.ZeroTotals, r.Resamples)
	}
	return p
}
