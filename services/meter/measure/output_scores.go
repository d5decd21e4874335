package measure

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
)

// writeScores writes the scorers' table below the treatments': per
// treatment and scorer, the mean of its values on [0, 1] with its interval
// and clustered SE, and how many graded attempts had a value. Nothing when
// no grade carries a score.
func writeScores(w io.Writer, r Report) error {
	any := false
	for _, t := range r.Treatments {
		any = any || len(t.Scores) > 0
	}
	if !any {
		return nil
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "scores, each mapped onto [0, 1] by its scale, over graded attempts; 95%% intervals by cluster\n"+
		"bootstrap over cases (%d resamples, seed %d), withheld under 2 cases:\n", r.Method.BootstrapResamples, r.Method.BootstrapSeed)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, strings.Join([]string{"treatment", "scorer", "scale", "mean", "95% interval", "clustered SE", "values", "missing"}, "\t")+"\t")
	for _, t := range r.Treatments {
		for _, s := range t.Scores {
			scale := fmt.Sprintf("%g–%g", s.Min, s.Max)
			if s.LowerIsBetter {
				scale += " ↓"
			}
			iv := "-"
			if s.Interval != nil {
				iv = fmt.Sprintf("[%.3f, %.3f]", s.Interval.Lo, s.Interval.Hi)
			}
			fmt.Fprintln(tw, strings.Join([]string{t.Treatment, s.Scorer, scale, num(s.Mean, "%.3f"), iv, num(s.ClusteredSE, "%.3f"),
				itoa(s.Values), itoa(s.Missing)}, "\t")+"\t")
		}
	}
	return tw.Flush()
}

// scoreDifference renders one scorer's paired difference for the
// comparisons: A − B on [0, 1] with its interval, and the signed-rank test.
func scoreDifference(d ScoreDifference) (string, string) {
	if d.Pairs == 0 {
		return "-", "no pair with a value under both"
	}
	diff := fmt.Sprintf("%+.3f", *d.MeanA-*d.MeanB)
	if d.Diff != nil {
		diff = fmt.Sprintf("%+.3f [%+.3f, %+.3f]", d.Diff.Estimate, d.Diff.Interval.Lo, d.Diff.Interval.Hi)
	}
	pairs := fmt.Sprintf("%d pairs, %d cases", d.Pairs, d.Clusters)
	if w := d.Wilcoxon; w != nil {
		pairs += fmt.Sprintf("; signed-rank p=%.3g", w.P)
	}
	if d.Withheld != "" {
		pairs += "; withheld: " + d.Withheld
	}
	return diff, pairs
}

// scoreColumns are a scorer's CSV columns, each named
// score_<scorer>_<column>.
var scoreColumns = []string{"mean", "lo", "hi", "clustered_se", "values", "missing"}

// reportScorers lists the scorers of a report's treatments, in the order
// they first appear.
func reportScorers(r Report) []string {
	var out []string
	for _, t := range r.Treatments {
		for _, s := range t.Scores {
			if !slices.Contains(out, s.Scorer) {
				out = append(out, s.Scorer)
			}
		}
	}
	return out
}

// scoreCells are a treatment's cells of the scorers' columns: empty where
// a statistic is undefined or the treatment has no such scorer.
func scoreCells(t TreatmentReport, scorers []string, f func(*float64) string) []string {
	var out []string
	for _, id := range scorers {
		i := slices.IndexFunc(t.Scores, func(s ScorerSummary) bool { return s.Scorer == id })
		if i < 0 {
			out = append(out, make([]string, len(scoreColumns))...)
			continue
		}
		s := t.Scores[i]
		var lo, hi *float64
		if s.Interval != nil {
			lo, hi = &s.Interval.Lo, &s.Interval.Hi
		}
		out = append(out, f(s.Mean), f(lo), f(hi), f(s.ClusteredSE), itoa(s.Values), itoa(s.Missing))
	}
	return out
}
