package measure

import (
	"fmt"
	"slices"
	"strings"

	"github.com/factline/factline/events"
	"github.com/factline/factline/internal/mapdiff"
	"github.com/factline/factline/stats"
)

// Labels of a comparison between two treatments.
const (
	// LabelAblation: the two agents differ in exactly one component.
	LabelAblation = "ablation"
	// LabelBundled: they differ in more than one; the comparison cannot
	// say which difference mattered, and names them all.
	LabelBundled = "bundled comparison"
	// LabelSameAgent: no component differs; the comparison measures noise.
	LabelSameAgent = "same agent"
	// LabelUnknown: an attempt has no recorded identity, or the trials of
	// one treatment on a case recorded (or ran as) different identities,
	// so what differs cannot be said and the paired statistics are
	// refused.
	LabelUnknown = "identity unknown"
)

// Comparison is the paired comparison of two treatments on the same roster.
type Comparison struct {
	A     string `json:"a"`
	B     string `json:"b"`
	Label string `json:"label"`
	// Differences names every component whose value differs between the
	// two agents, on any case.
	Differences []string `json:"differences"`
	Note        string   `json:"note,omitempty"`
	// Pairs counts the (case, trial) pairs graded passed or failed under
	// both treatments; only they enter the statistics.
	Pairs int      `json:"pairs"`
	RateA *float64 `json:"rate_a"`
	RateB *float64 `json:"rate_b"`
	// Difference is rate A − rate B over the pairs, with its paired cluster
	// bootstrap interval; nil when Withheld says why not.
	Difference *stats.Difference `json:"difference"`
	McNemar    *McNemar          `json:"mcnemar"`
	// Usage compares what the two treatments consumed (tokens, cost,
	// turns, wall time), paired on case and trial; nil when no pair of
	// ended attempts exists or the identities refuse the comparison.
	Usage *UsageComparison `json:"usage"`
	// Scores compare each scorer the grades name, paired like the rates
	// (docs/report.md#scores); absent when none does or the identities
	// refuse the comparison.
	Scores []ScoreDifference `json:"scores,omitempty"`
	// Withheld names the statistics the comparison refuses and why: all
	// the paired ones when the identities do not match (or are unknown),
	// the bootstrap interval when the pairs come from fewer than two cases
	// (as the clustered SE is).
	Withheld string `json:"withheld,omitempty"`
}

// McNemar is McNemar's exact test on the discordant pairs.
type McNemar struct {
	OnlyA int     `json:"only_a"` // pairs where only A passed
	OnlyB int     `json:"only_b"` // pairs where only B passed
	P     float64 `json:"p"`
}

// Compare compares treatments a and b over the report's attempt rows,
// reading their identities from the runs' run.requested facts. It is an
// ablation only when the agents differ in exactly one component.
func Compare(rows []AttemptRow, runs map[string]*Attempt, a, b string) Comparison {
	c := Comparison{A: a, B: b}
	c.Label, c.Differences, c.Note = label(rows, runs, a, b)

	type key struct {
		c string
		t uint32
	}
	scores := map[string]map[key]float64{a: {}, b: {}}
	for _, r := range rows {
		if m, ok := scores[r.Treatment]; ok && (r.Outcome == OutcomePassed || r.Outcome == OutcomeFailed) {
			s := 0.0
			if r.Outcome == OutcomePassed {
				s = 1
			}
			m[key{r.Case, r.Trial}] = s
		}
	}
	var cases byCase[stats.Pair]
	var sa, sb float64
	var onlyA, onlyB int
	for _, r := range rows {
		if r.Treatment != a {
			continue
		}
		k := key{r.Case, r.Trial}
		x, okA := scores[a][k]
		y, okB := scores[b][k]
		if !okA || !okB {
			continue
		}
		cases.add(r.Case, stats.Pair{A: x, B: y})
		c.Pairs++
		sa, sb = sa+x, sb+y
		switch {
		case x > y:
			onlyA++
		case y > x:
			onlyB++
		}
	}
	usage := compareUsage(rows, a, b)
	if c.Label == LabelUnknown {
		// Pairs of agents nobody can name measure nothing one could act on.
		if c.Pairs > 0 || usage != nil {
			c.Withheld = "the paired rates, their difference and interval, McNemar and the usage differences: " + c.Note
		}
		return c
	}
	c.Usage = usage
	c.Scores = compareScores(rows, a, b)
	if c.Pairs == 0 {
		return c
	}
	c.RateA, c.RateB = ptr(sa/float64(c.Pairs)), ptr(sb/float64(c.Pairs))
	if p, err := stats.McNemarExact(onlyA, onlyB); err == nil {
		c.McNemar = &McNemar{OnlyA: onlyA, OnlyB: onlyB, P: p}
	}
	if len(cases.order) < 2 {
		// Resampling one case gives that case back every time: a zero-width
		// interval that claims a certainty the data does not have.
		c.Withheld = fmt.Sprintf("the interval of the difference: the pairs come from %d case; a cluster bootstrap needs at least 2", len(cases.order))
		return c
	}
	if d, err := stats.PairedBootstrap(cases.clusters(), stats.DefaultResamples, stats.DefaultSeed); err == nil {
		c.Difference = &d
	}
	return c
}

// label decides what kind of comparison two treatments make, from the
// identity components their attempts recorded, case by case.
func label(rows []AttemptRow, runs map[string]*Attempt, a, b string) (string, []string, string) {
	// components[treatment][case] is the one component set of that
	// treatment's attempts on the case.
	components := map[string]map[string][]events.Component{a: {}, b: {}}
	// claimed[treatment][case] is the identity a runner claimed to run.
	claimed := map[string]map[string]events.Digest{a: {}, b: {}}
	for _, r := range rows {
		m, ok := components[r.Treatment]
		if !ok {
			continue
		}
		at := runs[r.Run]
		if at == nil || at.Requested == nil {
			continue // not requested yet: says nothing
		}
		comps := at.Requested.Components
		if len(comps) == 0 {
			return LabelUnknown, nil, fmt.Sprintf("identity unknown: run %s recorded no identity components", r.Run)
		}
		if old, seen := m[r.Case]; seen && len(DiffComponents(old, comps)) > 0 {
			return LabelUnknown, nil, fmt.Sprintf("the trials of %s on case %s recorded different identities (%s differ)",
				r.Treatment, r.Case, strings.Join(DiffComponents(old, comps), ", "))
		}
		m[r.Case] = comps
		if id := at.ClaimedIdentity(); id != "" {
			if old, seen := claimed[r.Treatment][r.Case]; seen && old != id {
				return LabelUnknown, nil, fmt.Sprintf("the trials of %s on case %s ran as different agents (run.claimed identities %s and %s)",
					r.Treatment, r.Case, old, id)
			}
			claimed[r.Treatment][r.Case] = id
		}
	}
	diff := map[string]bool{}
	compared := 0
	for cs, ca := range components[a] {
		cb, ok := components[b][cs]
		if !ok {
			continue
		}
		compared++
		for _, name := range DiffComponents(ca, cb) {
			diff[name] = true
		}
	}
	if compared == 0 {
		return LabelUnknown, nil, "no case has a recorded identity under both treatments yet"
	}
	names := make([]string, 0, len(diff))
	for n := range diff {
		names = append(names, n)
	}
	slices.Sort(names)
	switch len(names) {
	case 0:
		return LabelSameAgent, names, "no component differs: the difference measures noise"
	case 1:
		return LabelAblation, names, "only " + names[0] + " differs"
	}
	return LabelBundled, names, "differs in " + strings.Join(names, ", ") + ": the comparison cannot say which mattered"
}

// DiffComponents returns the names of the components whose values differ
// between two identities (a component present in one only differs). The
// values are compared in the form every version of a component shares
// (comparableValue): the stall component as version 1 wrote it equals the
// same thresholds at version 2.
func DiffComponents(a, b []events.Component) []string {
	va := map[string]string{}
	for _, c := range a {
		va[c.Name] = comparableValue(c.Name, c.Value)
	}
	vb := map[string]string{}
	for _, c := range b {
		vb[c.Name] = comparableValue(c.Name, c.Value)
	}
	return mapdiff.Keys(va, vb)
}
