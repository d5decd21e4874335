package measure

import (
	"fmt"
	"slices"
	"strconv"

	"github.com/factline/factline/events"
	"github.com/factline/factline/stats"
)

// ScorerSummary is one scorer's account of one treatment: the mean of its
// values (each mapped onto [0, 1] by the scorer's scale) over the
// treatment's graded attempts, with the case-clustered standard error and
// the cluster bootstrap interval of the mean. Attempts that are not graded
// passed or failed (pending, invalid, abstained, excluded, disputed,
// awaiting) stay out, as they do of the pass rate; a graded attempt whose
// case declares the scorer and that has no value of it is counted in
// Missing.
type ScorerSummary struct {
	Scorer        string  `json:"scorer"`
	Min           float64 `json:"min"`
	Max           float64 `json:"max"`
	LowerIsBetter bool    `json:"lower_is_better,omitempty"`
	// Values counts the graded attempts with a value; Missing those
	// without; Clusters the cases the values come from.
	Values   int `json:"values"`
	Missing  int `json:"missing"`
	Clusters int `json:"clusters"`
	// Mean is nil when no graded attempt has a value; ClusteredSE (CR1)
	// and Interval (95%, cluster bootstrap under the report's seed) are nil
	// when the values come from fewer than two cases.
	Mean        *float64        `json:"mean"`
	ClusteredSE *float64        `json:"clustered_se"`
	Interval    *stats.Interval `json:"interval"`
}

// ScoreDifference is one scorer's paired comparison of two treatments:
// the mean of value A − value B over the (case, trial) pairs graded under
// both with a value under both, its cluster bootstrap interval, and the
// Wilcoxon signed-rank test of the cases' mean differences (one per case,
// so that correlated trials count once).
type ScoreDifference struct {
	Scorer   string            `json:"scorer"`
	Pairs    int               `json:"pairs"`
	Clusters int               `json:"clusters"`
	MeanA    *float64          `json:"mean_a"`
	MeanB    *float64          `json:"mean_b"`
	Diff     *stats.Difference `json:"difference"`
	Wilcoxon *stats.Wilcoxon   `json:"wilcoxon"`
	// Withheld names what is withheld and why.
	Withheld string `json:"withheld,omitempty"`
}

// graded reports whether a row enters the statistics.
func graded(r AttemptRow) bool { return r.Outcome == OutcomePassed || r.Outcome == OutcomeFailed }

// scorerOrder lists the scorers the rows' grades name, in the order they
// first appear, with the definition the first one gave.
func scorerOrder(rows []AttemptRow) []events.Score {
	var out []events.Score
	seen := map[string]bool{}
	for _, r := range rows {
		for _, s := range r.Scores {
			if !seen[s.Scorer] {
				seen[s.Scorer] = true
				out = append(out, s)
			}
		}
	}
	return out
}

// declaring maps each scorer to the cases whose grades name it. A case
// declares a scorer when any grade of it lists one: an attempt of that case
// without a value lacks one (its scorer read none, or it was graded before
// the scorer existed), while an attempt of a case that never had the
// scorer lacks nothing, so a suite mixing cases does not count every other
// case's attempts as missing values.
func declaring(rows []AttemptRow) map[string]map[string]bool {
	out := map[string]map[string]bool{}
	for _, r := range rows {
		for _, s := range r.Scores {
			if out[s.Scorer] == nil {
				out[s.Scorer] = map[string]bool{}
			}
			out[s.Scorer][r.Case] = true
		}
	}
	return out
}

func valueOf(r AttemptRow, scorer string) (float64, bool) {
	for _, s := range r.Scores {
		if s.Scorer == scorer && s.Value != nil {
			return *s.Value, true
		}
	}
	return 0, false
}

// scoreSummaries is each scorer's summary of treatment t's rows.
func scoreSummaries(t string, rows []AttemptRow) []ScorerSummary {
	var out []ScorerSummary
	declared := declaring(rows)
	for _, def := range scorerOrder(rows) {
		s := ScorerSummary{Scorer: def.Scorer, Min: def.Min, Max: def.Max, LowerIsBetter: def.LowerIsBetter}
		var cases byCase[float64]
		sum := 0.0
		for _, r := range rows {
			if r.Treatment != t || !graded(r) {
				continue
			}
			v, ok := valueOf(r, def.Scorer)
			if !ok {
				if declared[def.Scorer][r.Case] {
					s.Missing++
				}
				continue
			}
			cases.add(r.Case, v)
			s.Values++
			sum += v
		}
		s.Clusters = len(cases.order)
		if s.Values > 0 {
			s.Mean = ptr(sum / float64(s.Values))
		}
		clusters := cases.clusters()
		if len(cases.order) >= 2 {
			if _, se, err := stats.ClusteredSE(clusters); err == nil {
				s.ClusteredSE = &se
			}
			if iv, err := stats.BootstrapMean(clusters, stats.DefaultResamples, stats.DefaultSeed); err == nil {
				s.Interval = &iv
			}
		}
		out = append(out, s)
	}
	return out
}

// compareScores is each scorer's paired comparison of treatments a and b.
func compareScores(rows []AttemptRow, a, b string) []ScoreDifference {
	type key struct {
		c string
		t uint32
	}
	var out []ScoreDifference
	for _, def := range scorerOrder(rows) {
		d := ScoreDifference{Scorer: def.Scorer}
		bv := map[key]float64{}
		for _, r := range rows {
			if r.Treatment != b || !graded(r) {
				continue
			}
			if v, ok := valueOf(r, def.Scorer); ok {
				bv[key{r.Case, r.Trial}] = v
			}
		}
		var cases byCase[stats.Pair]
		var sa, sb float64
		for _, r := range rows {
			if r.Treatment != a || !graded(r) {
				continue
			}
			x, okA := valueOf(r, def.Scorer)
			y, okB := bv[key{r.Case, r.Trial}]
			if !okA || !okB {
				continue
			}
			cases.add(r.Case, stats.Pair{A: x, B: y})
			d.Pairs++
			sa, sb = sa+x, sb+y
		}
		d.Clusters = len(cases.order)
		if d.Pairs == 0 {
			out = append(out, d)
			continue
		}
		d.MeanA, d.MeanB = ptr(sa/float64(d.Pairs)), ptr(sb/float64(d.Pairs))
		if len(cases.order) < 2 {
			d.Withheld = fmt.Sprintf("the interval and the signed-rank test: the pairs come from %d case; both need at least 2", len(cases.order))
			out = append(out, d)
			continue
		}
		clusters := cases.clusters()
		caseDiffs := make([]float64, len(clusters))
		for i, pairs := range clusters {
			s := 0.0
			for _, p := range pairs {
				s += p.A - p.B
			}
			caseDiffs[i] = s / float64(len(pairs))
		}
		if diff, err := stats.PairedBootstrap(clusters, stats.DefaultResamples, stats.DefaultSeed); err == nil {
			d.Diff = &diff
		}
		if w, err := stats.WilcoxonSignedRank(caseDiffs); err == nil {
			d.Wilcoxon = &w
		} else {
			d.Withheld = "the signed-rank test: every case's mean difference is zero"
		}
		out = append(out, d)
	}
	return out
}

// caseScores is each scorer's mean on one case under one treatment.
// declared is declaring(rows).
func caseScores(rows []AttemptRow, c, t string, scorers []events.Score, declared map[string]map[string]bool) []CaseScore {
	var out []CaseScore
	for _, def := range scorers {
		s := CaseScore{Scorer: def.Scorer}
		sum := 0.0
		for _, r := range rows {
			if r.Case != c || r.Treatment != t || !graded(r) {
				continue
			}
			if v, ok := valueOf(r, def.Scorer); ok {
				s.Values++
				sum += v
			} else if declared[def.Scorer][c] {
				s.Missing++
			}
		}
		if s.Values > 0 {
			s.Mean = ptr(sum / float64(s.Values))
		}
		out = append(out, s)
	}
	return out
}

// caseScoreIDs lists the scorers of by-case rows, in order.
func caseScoreIDs(rows []CaseRow) []string {
	var out []string
	for _, r := range rows {
		for _, s := range r.Scores {
			if !slices.Contains(out, s.Scorer) {
				out = append(out, s.Scorer)
			}
		}
	}
	return out
}

// caseScoreHead names the by-case CSV's scorer columns.
func caseScoreHead(rows []CaseRow) []string {
	var out []string
	for _, id := range caseScoreIDs(rows) {
		out = append(out, "score_"+id+"_mean", "score_"+id+"_values", "score_"+id+"_missing")
	}
	return out
}

// caseScoreCells are a by-case row's cells of the scorer columns.
func caseScoreCells(r CaseRow, ids []string) []string {
	var out []string
	for _, id := range ids {
		i := slices.IndexFunc(r.Scores, func(s CaseScore) bool { return s.Scorer == id })
		if i < 0 {
			out = append(out, "", "", "")
			continue
		}
		s := r.Scores[i]
		mean := ""
		if s.Mean != nil {
			mean = strconv.FormatFloat(*s.Mean, 'f', -1, 64)
		}
		out = append(out, mean, itoa(s.Values), itoa(s.Missing))
	}
	return out
}
