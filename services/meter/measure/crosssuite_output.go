package measure

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
)

// WriteCompareJSON writes a comparison across suites as indented JSON.
func WriteCompareJSON(w io.Writer, c SuiteComparison) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(c)
}

// sideLine says which suite a side is and whether it is complete.
func sideLine(name string, s SuiteSide) string {
	state := "complete"
	if !s.Complete {
		state = "not complete"
	}
	return fmt.Sprintf("%s = %s (suite %s, %d trials, %s)", name, s.Source, s.Suite, s.Trials, state)
}

// pairNames renders the treatment pairs: "base" when A's and B's names
// agree, "old → new" when they do not.
func pairNames(p TreatmentPair) string {
	if p.A == p.B {
		return p.A
	}
	return p.A + " → " + p.B
}

// changeCell renders B − A of the pass rate in points with its interval,
// or why there is none.
func changeCell(p PairedComparison) string {
	switch {
	case p.Label == LabelUnknown:
		return "withheld: " + p.Note
	case p.Change == nil:
		return "no pair graded on both sides"
	case p.Change.Low != nil:
		return fmt.Sprintf("%+.1f pts [%+.1f, %+.1f]", p.Change.Points, *p.Change.Low, *p.Change.High)
	}
	return fmt.Sprintf("%+.1f pts (no interval)", p.Change.Points)
}

// pairedCell says what a paired comparison rests on: its pairs, the two
// rates and McNemar's test (OnlyA: pairs only A passed).
func pairedCell(p PairedComparison) string {
	s := fmt.Sprintf("%d pairs", p.Pairs)
	if p.RateA != nil && p.RateB != nil {
		s += fmt.Sprintf("; A %.1f%%, B %.1f%%", 100**p.RateA, 100**p.RateB)
	}
	if m := p.McNemar; m != nil {
		s += fmt.Sprintf("; McNemar: %d only A passed, %d only B, p=%.4g", m.OnlyA, m.OnlyB, m.P)
	}
	if p.Withheld != "" && p.Label != LabelUnknown {
		s += "; withheld: " + p.Withheld
	}
	return s
}

// identityLine names what differs between the agents of A and B.
func identityLine(p PairedComparison) string {
	s := p.Label
	if len(p.Differences) > 0 {
		s += "; what differs: " + strings.Join(p.Differences, ", ")
	}
	if p.Label == LabelUnknown && p.Note != "" {
		s += ": " + p.Note
	}
	return s
}

// scoreChange renders one scorer's paired B − A (in the scorer's units)
// with its interval, and what it rests on.
func scoreChange(d ScoreDifference) (string, string) {
	if d.Pairs == 0 {
		return "-", "no pair with a value on both sides"
	}
	diff := fmt.Sprintf("%+.3f", *d.MeanB-*d.MeanA)
	if d.Diff != nil {
		diff = fmt.Sprintf("%+.3f [%+.3f, %+.3f]", -d.Diff.Estimate+0, -d.Diff.Interval.Hi+0, -d.Diff.Interval.Lo+0)
	}
	rest := fmt.Sprintf("%d pairs, %d cases; A %.3f, B %.3f", d.Pairs, d.Clusters, *d.MeanA, *d.MeanB)
	if w := d.Wilcoxon; w != nil {
		rest += fmt.Sprintf("; signed-rank p=%.3g", w.P)
	}
	if d.Withheld != "" {
		rest += "; withheld: " + d.Withheld
	}
	return diff, rest
}

// WriteCompareText writes a comparison across suites for people.
func WriteCompareText(w io.Writer, c SuiteComparison) error {
	fmt.Fprintln(w, "compare "+sideLine("A", c.A))
	fmt.Fprintln(w, "   with "+sideLine("B", c.B))
	pairs := make([]string, len(c.Treatments))
	for i, p := range c.Treatments {
		pairs[i] = pairNames(p)
	}
	fmt.Fprintf(w, "paired on case and trial under %s; changes are B − A, pass rates in points; 95%% intervals by\n"+
		"cluster bootstrap over cases (%d resamples, seed %d)\n", strings.Join(pairs, ", "), c.Method.BootstrapResamples, c.Method.BootstrapSeed)
	for _, ch := range c.Changed {
		what := "refused from the pairing (--allow-changed-cases pairs it)"
		if ch.Paired {
			what = "paired (--allow-changed-cases)"
		}
		fmt.Fprintf(w, "changed case %s: its content differs (A %s, B %s): %s\n", ch.Case, short(string(ch.DigestA)), short(string(ch.DigestB)), what)
	}
	if len(c.OnlyA) > 0 {
		fmt.Fprintf(w, "only in A: %s\n", strings.Join(c.OnlyA, ", "))
	}
	if len(c.OnlyB) > 0 {
		fmt.Fprintf(w, "only in B: %s\n", strings.Join(c.OnlyB, ", "))
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, p := range c.blocks() {
		name := blockName(p, "all treatments")
		fmt.Fprintf(tw, "%s\tagents: %s\t\n", name, identityLine(p))
		fmt.Fprintf(tw, "  pass rate\t%s\t%s\n", changeCell(p), pairedCell(p))
		for _, d := range p.Scores {
			diff, rest := scoreChange(d)
			fmt.Fprintf(tw, "  score %s\t%s\t%s\n", d.Scorer, diff, rest)
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(c.Cases) > 0 {
		fmt.Fprintln(w)
		tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "case\ttreatment\tpairs\tA passed\tB passed\tchange\tMcNemar p\tverdict\t")
		for _, cc := range c.Cases {
			v := cc.Verdict
			if cc.Changed {
				v += " (case changed)"
			}
			fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%s\t%s\t%s\t\n", cc.Case, pairNames(cc.Treatments), cc.Pairs, cc.PassedA, cc.PassedB,
				points(cc.Points), mcnemarP(cc.McNemar), v)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	fmt.Fprintf(w, "\nregressed: %s\nimproved: %s\n", listOrNone(c.Regressed), listOrNone(c.Improved))
	return nil
}

// WriteCompareMarkdown writes a comparison across suites as Markdown, for
// a pull request's comment.
func WriteCompareMarkdown(w io.Writer, c SuiteComparison) error {
	fmt.Fprintf(w, "### factline compare: %s (A) → %s (B)\n\n", mdCell(c.A.Source), mdCell(c.B.Source))
	if !c.A.Complete || !c.B.Complete {
		fmt.Fprintf(w, "> **Not complete:** A %s, B %s; the figures may still move.\n\n", completeWord(c.A.Complete), completeWord(c.B.Complete))
	}
	fmt.Fprintln(w, "| treatments | agents | pass rate B − A (95% CI) | pairs |")
	fmt.Fprintln(w, "|---|---|---|---|")
	for _, p := range c.blocks() {
		name := blockName(p, "**all**")
		fmt.Fprintf(w, "| %s | %s | %s | %s |\n", mdCell(name), mdCell(identityLine(p)), mdCell(changeCell(p)), mdCell(pairedCell(p)))
		for _, d := range p.Scores {
			diff, rest := scoreChange(d)
			fmt.Fprintf(w, "| %s | score %s | %s | %s |\n", mdCell(name), mdCell(d.Scorer), mdCell(diff), mdCell(rest))
		}
	}
	fmt.Fprintln(w)
	if len(c.Changed) > 0 {
		fmt.Fprintln(w, "**Changed cases** (content differs between A and B):")
		for _, ch := range c.Changed {
			what := "refused from the pairing"
			if ch.Paired {
				what = "paired (--allow-changed-cases)"
			}
			fmt.Fprintf(w, "- `%s`: %s\n", ch.Case, what)
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintf(w, "**Regressed:** %s  \n**Improved:** %s\n", mdList(c.Regressed), mdList(c.Improved))
	if len(c.Cases) == 0 {
		return nil
	}
	fmt.Fprintln(w, "\n<details><summary>per case</summary>\n\n| case | treatments | pairs | A passed | B passed | change | McNemar p | verdict |\n|---|---|---|---|---|---|---|---|")
	for _, cc := range c.Cases {
		fmt.Fprintf(w, "| %s | %s | %d | %d | %d | %s | %s | %s |\n", mdCell(cc.Case), mdCell(pairNames(cc.Treatments)), cc.Pairs,
			cc.PassedA, cc.PassedB, points(cc.Points), mcnemarP(cc.McNemar), cc.Verdict)
	}
	_, err := fmt.Fprintln(w, "\n</details>")
	return err
}

// CompareCSVHeader is the header row of WriteCompareCSV.
var CompareCSVHeader = []string{"case", "treatment_a", "treatment_b", "pairs", "passed_a", "passed_b",
	"rate_a", "rate_b", "change_points", "mcnemar_p", "verdict", "case_changed"}

// WriteCompareCSV writes one row per case and treatment pair.
func WriteCompareCSV(w io.Writer, c SuiteComparison) error {
	cw := csv.NewWriter(w)
	if err := cw.Write(CompareCSVHeader); err != nil {
		return err
	}
	f := csvFloat('f')
	for _, cc := range c.Cases {
		p := ""
		if cc.McNemar != nil {
			p = strconv.FormatFloat(cc.McNemar.P, 'g', 6, 64)
		}
		if err := cw.Write([]string{cc.Case, cc.Treatments.A, cc.Treatments.B, itoa(cc.Pairs), itoa(cc.PassedA), itoa(cc.PassedB),
			f(cc.RateA), f(cc.RateB), f(cc.Points), p, cc.Verdict, strconv.FormatBool(cc.Changed)}); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}

func short(d string) string {
	if i := strings.IndexByte(d, ':'); i >= 0 {
		d = d[i+1:]
	}
	if len(d) > 12 {
		return d[:12]
	}
	return d
}

func points(p *float64) string {
	if p == nil {
		return "-"
	}
	return fmt.Sprintf("%+.1f pts", *p)
}

func mcnemarP(m *McNemar) string {
	if m == nil {
		return "-"
	}
	return fmt.Sprintf("%.4g", m.P)
}

func listOrNone(xs []string) string {
	if len(xs) == 0 {
		return "none"
	}
	return strings.Join(xs, ", ")
}

func mdList(xs []string) string {
	if len(xs) == 0 {
		return "none"
	}
	out := make([]string, len(xs))
	for i, x := range xs {
		out[i] = "`" + x + "`"
	}
	return strings.Join(out, ", ")
}

// mdCell keeps a value inside its Markdown table cell.
func mdCell(s string) string {
	return strings.NewReplacer("|", `\|`, "\n", " ").Replace(s)
}

func completeWord(b bool) string {
	if b {
		return "complete"
	}
	return "not complete"
}

// blocks is the treatment pairs a comparison's text and Markdown show, a
// block each: the overall comparison first when there are several pairs.
func (c SuiteComparison) blocks() []PairedComparison {
	if len(c.ByTreatment) > 1 {
		return append([]PairedComparison{c.Overall}, c.ByTreatment...)
	}
	return c.ByTreatment
}

// blockName names a block: its treatment pair, or all for the overall one.
func blockName(p PairedComparison, all string) string {
	if p.Treatments.A == "*" {
		return all
	}
	return pairNames(p.Treatments)
}
