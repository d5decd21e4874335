package measure

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"html"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/factline/factline/events"
)

// WriteJSON writes the report as indented JSON: the form stored as the
// report blob that suite.reported names, EncodeJSON's bytes. It holds one
// attempt row's JSON at a time, not the report's (jsonstream.go).
func WriteJSON(w io.Writer, r Report) error { return writeJSON(w, r) }

// EncodeJSON returns the report's canonical JSON (indented, ending in a
// newline). The same report always encodes to the same bytes.
func EncodeJSON(r Report) ([]byte, error) {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("encode report of %s: %w", r.Suite, err)
	}
	return append(b, '\n'), nil
}

// State says how far the report is: complete, in progress (attempts
// awaiting), or held back by disputed grades; and, for a one-trial suite,
// that it is a smoke read.
func (r Report) State() string {
	state := "complete"
	disputed, awaiting := 0, 0
	for _, t := range r.Treatments {
		disputed += t.Disputed
		awaiting += t.Awaiting
	}
	switch {
	case awaiting > 0:
		state = "in progress"
	case !r.Complete && disputed > 0:
		state = "not complete"
	}
	if disputed > 0 {
		state += fmt.Sprintf(": %d disputed by an unresolved grade.conflict", disputed)
	}
	if r.Smoke {
		state += "; smoke read (one trial: the path is live, no quality claim)"
	}
	if st := r.StoppedEarly; st != nil {
		what := "the difference excludes zero"
		if st.Reason == events.StopEquivalence {
			what = "the difference lies within the equivalence margin"
		}
		on := st.Comparison
		if st.Scorer != "" {
			on += " on scorer " + st.Scorer + " (points of its [0, 1] scale)"
		}
		state += fmt.Sprintf("; stopped early after %d pairs: %s, %s [%+.1f, %+.1f] pts at %.1f%% (anytime-valid)",
			st.Pairs, on, what, float64(st.Low)/10, float64(st.High)/10, float64(st.Confidence)/10)
	}
	return state
}

func pct(p *float64) string {
	if p == nil {
		return "-"
	}
	return fmt.Sprintf("%.1f%%", 100**p)
}

// csvFloat formats a CSV cell of a figure that may be unknown: empty when
// it is, else the shortest exact form in strconv's format ('f' or 'g').
func csvFloat(format byte) func(*float64) string {
	return func(p *float64) string {
		if p == nil {
			return ""
		}
		return strconv.FormatFloat(*p, format, -1, 64)
	}
}

func num(p *float64, format string) string {
	if p == nil {
		return "-"
	}
	return fmt.Sprintf(format, *p)
}

// WriteTable writes the report as terminal tables that fit 100 columns:
// a heading; one row per treatment with the attempts ended of planned,
// the counts that decide it (what is neither passed nor failed is
// "other", broken down below the tables), pass rate with its interval,
// pass@1 and pass@n; then what the ended attempts consumed, each column
// with its unit; then the comparisons. WriteWideTable has every column.
func WriteTable(w io.Writer, r Report) error {
	writeHeading(w, r)
	tw := tabwriter.NewWriter(w, 0, 0, 1, ' ', tabwriter.AlignRight)
	head := []string{"treatment", "ended/planned", "passed", "failed", "other", "pass rate", "95% Wilson", "pass@1"}
	if r.Trials > 1 {
		head = append(head, fmt.Sprintf("pass@%d", r.Trials))
	}
	fmt.Fprintln(tw, strings.Join(head, "\t")+"\t")
	var notes []string
	for _, t := range r.Treatments {
		other := t.Pending + t.Invalid + t.Abstained + t.Excluded + t.Awaiting + t.Disputed
		cells := []string{t.Treatment, fmt.Sprintf("%d/%d", t.Ended, t.Planned), itoa(t.Passed), itoa(t.Failed), itoa(other),
			pct(t.PassRate), wilson(t), passAt(t, 1)}
		if r.Trials > 1 {
			cells = append(cells, passAt(t, int(r.Trials)))
		}
		fmt.Fprintln(tw, strings.Join(cells, "\t")+"\t")
		if n := breakdown(t); n != "" {
			notes = append(notes, wrap(fmt.Sprintf("  %s: %s", t.Treatment, n), 100, "    "))
		}
		if strings.HasPrefix(t.Harness, HarnessExternal) {
			// Its own evidence class: said wherever its numbers are.
			notes = append(notes, wrap(fmt.Sprintf("  %s: an %s agent: its evidence is its recorded model calls and its final "+
				"workspace, with no dispatches under tool contracts (docs/agents.md)", t.Treatment, t.Harness), 100, "    "))
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if err := writeUsage(w, r); err != nil {
		return err
	}
	if len(notes) > 0 {
		fmt.Fprintln(w)
		fmt.Fprintln(w, "other, and what the columns leave out (report --wide, --json or --csv has every column):")
		for _, n := range notes {
			fmt.Fprintln(w, n)
		}
	}
	if err := writeScores(w, r); err != nil {
		return err
	}
	return writeComparisons(w, r)
}

// writeUsage writes the narrow report's second table: what each
// treatment's ended attempts consumed, every column with its unit.
func writeUsage(w io.Writer, r Report) error {
	fmt.Fprintln(w)
	fmt.Fprintf(w, "usage, summed over the ended attempts (cost in %s, the unit of prices and budgets):\n", UnitCost)
	tw := tabwriter.NewWriter(w, 0, 0, 1, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, strings.Join([]string{"treatment", "ended", "turns", "input tokens", "output tokens", "tokens",
		"cost (" + UnitCost + ")", "wall (s)"}, "\t")+"\t")
	for _, t := range r.Treatments {
		u := t.Usage
		turns, wall := turnsAndWall(t.Ended, u)
		cells := []string{t.Treatment, itoa(t.Ended), turns, total(u.InputTokens, u.SplitUnknown), total(u.OutputTokens, u.SplitUnknown),
			total(u.Tokens, u.TokensUnknown), total(u.Cost, u.CostUnknown), wall}
		fmt.Fprintln(tw, strings.Join(cells, "\t")+"\t")
	}
	return tw.Flush()
}

// turnsAndWall are a treatment's turns and wall time as a table shows
// them: "-" where no attempt ended, or none knew its wall time.
func turnsAndWall(ended int, u Usage) (turns, wall string) {
	turns, wall = "-", "-"
	if ended > 0 {
		turns = strconv.FormatUint(u.Turns, 10)
	}
	if u.WallKnown > 0 {
		wall = seconds(u.WallMillis, "%.1f")
	}
	return turns, wall
}

// wrap breaks a line at spaces so that no line passes width columns
// (a word longer than that stays whole), indenting the lines after the
// first.
func wrap(line string, width int, indent string) string {
	var b strings.Builder
	col := 0
	for i, word := range strings.Split(line, " ") {
		n := len([]rune(word))
		switch {
		case i == 0:
		case col+1+n > width:
			b.WriteString("\n" + indent)
			col = len(indent)
		default:
			b.WriteByte(' ')
			col++
		}
		b.WriteString(word)
		col += n
	}
	return b.String()
}

// seconds renders milliseconds as seconds in format.
func seconds(millis uint64, format string) string {
	return fmt.Sprintf(format, float64(millis)/1000)
}

// total is a usage cell of the narrow table: the known total, with a "+"
// when some attempts' usage is unknown (breakdown says how many), "?" when
// none is known.
func total(t *uint64, unknown int) string {
	switch {
	case t == nil && unknown > 0:
		return "?"
	case t == nil:
		return "-"
	case unknown > 0:
		return strconv.FormatUint(*t, 10) + "+"
	}
	return strconv.FormatUint(*t, 10)
}

// breakdown names a treatment's counts the narrow table folds away.
func breakdown(t TreatmentReport) string {
	var parts []string
	for _, c := range []struct {
		n    int
		what string
	}{{t.Pending, "pending"}, {t.Invalid, "invalid"}, {t.Abstained, "abstained"}, {t.Excluded, "excluded"},
		{t.Awaiting, "awaiting"}, {t.Disputed, "disputed"}, {t.HarnessErrors, "harness errors"}, {t.Retried, "retried"}} {
		if c.n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", c.n, c.what))
		}
	}
	if u := t.Usage; u.TokensUnknown > 0 || u.CostUnknown > 0 {
		parts = append(parts, fmt.Sprintf("tokens unknown for %d, cost for %d", u.TokensUnknown, u.CostUnknown))
	}
	if u := t.Usage; u.SplitUnknown > u.TokensUnknown {
		// Where the tokens are unknown, so is their split: count the rest.
		more := ""
		if u.TokensUnknown > 0 {
			more = " more"
		}
		parts = append(parts, fmt.Sprintf("the input/output split unknown for %d%s", u.SplitUnknown-u.TokensUnknown, more))
	}
	if u := t.Usage; u.CachedCalls > 0 {
		parts = append(parts, "served from the response cache "+cached(u.CachedCalls, u.CachedTokens))
	}
	if c := t.Context; c != nil {
		parts = append(parts, "context summaries (part of the usage) "+contextCost(*c))
	}
	if d := t.Delegation; d != nil {
		parts = append(parts, fmt.Sprintf("delegated to %d child runs (part of the usage): tokens %s own + %s children, %s %s own + %s children",
			d.Children, orUnknown(d.OwnTokens), orUnknown(d.ChildTokens), UnitCost, orUnknown(d.OwnCost), orUnknown(d.ChildCost)))
	}
	if e := t.Evaluator; e.Calls > 0 {
		parts = append(parts, "evaluator cost in "+UnitCost+" "+evaluator(e))
	}
	if u := t.RetriedUsage; u != nil {
		noun := "runs"
		if u.Runs == 1 {
			noun = "run"
		}
		parts = append(parts, fmt.Sprintf("%d %s replaced by a retry spent %s tokens, %s %s apart from the usage above", u.Runs, noun,
			knownOf(u.Tokens, u.TokensUnknown), knownOf(u.Cost, u.CostUnknown), UnitCost))
	}
	return strings.Join(parts, ", ")
}

func wilson(t TreatmentReport) string {
	if t.Wilson == nil {
		return "-"
	}
	return fmt.Sprintf("[%.1f%%, %.1f%%]", 100*t.Wilson.Lo, 100*t.Wilson.Hi)
}

func writeHeading(w io.Writer, r Report) {
	fmt.Fprintf(w, "suite %s (split %s): %d cases × %d treatments × %d trials, %s\n", r.Suite, r.Split, len(r.Cases),
		len(r.Treatments), r.Trials, r.State())
	fmt.Fprintf(w, "spec %s; valid outcomes %v", r.SpecDigest, r.ValidOutcomes)
	if len(r.Required) > 0 {
		fmt.Fprintf(w, "; required instruments %v", r.Required)
	}
	fmt.Fprintln(w)
	for _, line := range r.ControlLines() {
		fmt.Fprintln(w, line)
	}
	fmt.Fprintln(w)
}

// maxNotRunListed bounds the runs the heading names as never run; the
// JSON marks each (not_run).
const maxNotRunListed = 8

// ControlLines are what the report's heading says of the operator's
// controls of the suite (who, when, why, in log order) and of the
// attempts that never ran, which no figure counts; none for a suite
// never controlled that ran every attempt.
func (r Report) ControlLines() []string {
	var out []string
	if len(r.Controlled) > 0 {
		var parts []string
		for _, c := range r.Controlled {
			part := fmt.Sprintf("%s by %s at %s", pastTense(c.Action), c.From, c.At.UTC().Format(time.RFC3339))
			if c.Reason != "" {
				part += fmt.Sprintf(" (%q)", c.Reason)
			}
			parts = append(parts, part)
		}
		out = append(out, fmt.Sprintf("controlled (now %s): %s", r.ControlState, strings.Join(parts, "; ")))
	}
	if r.NotRun > 0 {
		var runs []string
		for _, a := range r.Attempts {
			if a.NotRun && len(runs) < maxNotRunListed {
				runs = append(runs, a.Run)
			}
		}
		more := ""
		if r.NotRun > len(runs) {
			more = fmt.Sprintf(" and %d more (report --json marks each not_run)", r.NotRun-len(runs))
		}
		noun := "attempts"
		if r.NotRun == 1 {
			noun = "attempt"
		}
		out = append(out, fmt.Sprintf("%d %s never ran, counted in no figure (excluded: not failed, in no rate): %s%s",
			r.NotRun, noun, strings.Join(runs, ", "), more))
	}
	return out
}

// pastTense names what a control did.
func pastTense(a events.SuiteAction) string {
	switch a {
	case events.SuitePause:
		return "paused"
	case events.SuiteResume:
		return "resumed"
	case events.SuiteDrain:
		return "drained"
	case events.SuiteCancel:
		return "cancelled"
	}
	return string(a)
}

// PassKs are the k a table shows pass@k for, of n trials: 1, 2, 5, 10,
// 20, 50, 100, … below n, and n. Every k is in the JSON.
func PassKs(n int) []int {
	var ks []int
	for k, step := 1, 0; k < n; step++ {
		ks = append(ks, k)
		k = []int{2, 5, 10}[step%3] * pow10(step/3)
	}
	if n >= 1 {
		ks = append(ks, n)
	}
	return ks
}

func pow10(e int) int {
	p := 1
	for range e {
		p *= 10
	}
	return p
}

// WriteWideTable writes the report with every column of docs/report.md
// (pass@k for the k of PassKs), then the comparisons.
func WriteWideTable(w io.Writer, r Report) error {
	writeHeading(w, r)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	head := []string{"treatment", "planned", "started", "ended", "graded", "passed", "failed", "pending", "invalid",
		"abstained", "excluded", "harness errors", "retried", "awaiting", "disputed", "pass rate", "95% Wilson", "clustered SE"}
	ks := PassKs(int(r.Trials))
	for _, k := range ks {
		head = append(head, fmt.Sprintf("pass@%d", k))
	}
	head = append(head, "turns", "input tokens", "output tokens", "prompt-cached input", "reasoning", "tokens", "cost ("+UnitCost+")",
		"response cache", "wall (s)", "evaluator cost ("+UnitCost+")")
	fmt.Fprintln(tw, strings.Join(head, "\t")+"\t")
	for _, t := range r.Treatments {
		cells := []string{t.Treatment, itoa(t.Planned), itoa(t.Started), itoa(t.Ended), itoa(t.Graded), itoa(t.Passed),
			itoa(t.Failed), itoa(t.Pending), itoa(t.Invalid), itoa(t.Abstained), itoa(t.Excluded), itoa(t.HarnessErrors), itoa(t.Retried),
			itoa(t.Awaiting), itoa(t.Disputed), pct(t.PassRate), wilson(t), num(t.ClusteredSE, "%.3f")}
		for _, k := range ks {
			cells = append(cells, passAt(t, k))
		}
		u := t.Usage
		turns, wall := turnsAndWall(t.Ended, u)
		cells = append(cells, turns, known(u.InputTokens, u.SplitUnknown), known(u.OutputTokens, u.SplitUnknown),
			known(u.CachedInputTokens, t.Ended-u.CachedInputKnown), known(u.ReasoningTokens, t.Ended-u.ReasoningKnown),
			known(u.Tokens, u.TokensUnknown), known(u.Cost, u.CostUnknown), cached(u.CachedCalls, u.CachedTokens), wall, evaluator(t.Evaluator))
		fmt.Fprintln(tw, strings.Join(cells, "\t")+"\t")
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if err := writeScores(w, r); err != nil {
		return err
	}
	return writeComparisons(w, r)
}

// writeComparisons writes the comparisons below a table: per pair of
// treatments, the paired difference of the pass rate in points and the
// paired relative difference of every usage figure, each with its
// interval, its pairs and the figures per attempt it compares.
func writeComparisons(w io.Writer, r Report) error {
	if len(r.Comparisons) == 0 {
		return nil
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "comparisons of A vs B, paired on case and trial: the pass rate as A − B in points, usage as\n"+
		"A/B − 1 in percent (a pair whose figure is unknown on a side is left out, counted as unknown);\n"+
		"95%% intervals by cluster bootstrap over cases (%d resamples, seed %d); McNemar exact:\n",
		r.Method.BootstrapResamples, r.Method.BootstrapSeed)
	for _, c := range r.Comparisons {
		fmt.Fprintf(w, "  %s vs %s: %s", c.A, c.B, c.Label)
		if len(c.Differences) > 0 {
			fmt.Fprintf(w, " (%s)", strings.Join(c.Differences, ", "))
		}
		if c.Label == LabelUnknown {
			if c.Note != "" {
				fmt.Fprintf(w, ": %s", c.Note)
			}
			fmt.Fprintf(w, "; %d pairs graded", c.Pairs)
			if c.Withheld != "" {
				fmt.Fprintf(w, "; withheld: %s", c.Withheld)
			}
			fmt.Fprintln(w)
			continue
		}
		fmt.Fprintln(w)
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintf(tw, "    pass rate\t%s\t%s\n", rateDifference(c), ratePairs(c))
		if u := c.Usage; u != nil {
			for _, m := range []struct {
				name string
				p    *PairedUsage
			}{{"tokens", u.Tokens}, {"input tokens", u.InputTokens}, {"output tokens", u.OutputTokens},
				{"cost", u.Cost}, {"turns", u.Turns}, {"wall time", u.WallMillis}} {
				fmt.Fprintf(tw, "    %s\t%s\t%s\n", m.name, relative(m.p), usagePairsCell(m.p))
			}
		}
		for _, d := range c.Scores {
			diff, pairs := scoreDifference(d)
			fmt.Fprintf(tw, "    score %s\t%s\t%s\n", d.Scorer, diff, pairs)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	return nil
}

// rateDifference renders the pass rate's paired difference in points,
// with its interval where one is given.
func rateDifference(c Comparison) string {
	switch {
	case c.Difference != nil:
		d := c.Difference
		return fmt.Sprintf("%+.1f pts [%+.1f, %+.1f]", 100*d.Estimate, 100*d.Interval.Lo, 100*d.Interval.Hi)
	case c.RateA != nil && c.RateB != nil:
		return fmt.Sprintf("%+.1f pts (no interval)", 100*(*c.RateA-*c.RateB))
	}
	return "-"
}

// ratePairs says what the pass rate's difference rests on.
func ratePairs(c Comparison) string {
	s := fmt.Sprintf("%d pairs graded", c.Pairs)
	if c.RateA != nil && c.RateB != nil {
		s += fmt.Sprintf("; %.1f%% vs %.1f%%", 100**c.RateA, 100**c.RateB)
	}
	if c.McNemar != nil {
		s += fmt.Sprintf("; McNemar %d/%d p=%.4g", c.McNemar.OnlyA, c.McNemar.OnlyB, c.McNemar.P)
	}
	if c.Withheld != "" {
		s += "; withheld: " + c.Withheld
	}
	return s
}

// relative renders a usage figure's relative difference with its
// interval, or why it has none.
func relative(p *PairedUsage) string {
	switch {
	case p == nil || p.Pairs == 0:
		return "-"
	case p.Relative == nil:
		return "- (B's total is 0)"
	}
	x := p.Relative
	switch {
	case x.Interval != nil:
		return fmt.Sprintf("%+.1f%% [%+.1f, %+.1f]", 100*x.Estimate, 100*x.Interval.Lo, 100*x.Interval.Hi)
	case x.Clusters < 2:
		return fmt.Sprintf("%+.1f%% (no interval: the pairs come from %d case)", 100*x.Estimate, x.Clusters)
	}
	return fmt.Sprintf("%+.1f%% (no interval: %d resamples have a B total of 0)", 100*x.Estimate, x.ZeroTotals)
}

// usagePairsCell says how many pairs a usage figure rests on, how many
// were left out, and the figures per attempt it compares, in their unit.
func usagePairsCell(p *PairedUsage) string {
	if p == nil {
		return "-"
	}
	s := fmt.Sprintf("%d pairs", p.Pairs)
	if p.LeftOut > 0 {
		s += fmt.Sprintf(", %d unknown", p.LeftOut)
	}
	if p.MeanA == nil || p.MeanB == nil {
		return s
	}
	a, b, unit := *p.MeanA, *p.MeanB, p.Unit
	format := "%.1f vs %.1f"
	switch unit {
	case UnitTokens:
		format = "%.0f vs %.0f"
	case UnitWall:
		a, b, unit, format = a/1000, b/1000, "s", "%.2f vs %.2f"
	}
	return s + "; " + fmt.Sprintf(format, a, b) + " " + unit + " per attempt"
}

func itoa(n int) string { return strconv.Itoa(n) }

// known renders a total with its unknown count apart: "1200", "1200 + 2
// unknown", "unknown (3)" when no attempt's figure is known, or "-" when
// no attempt ended.
func known(total *uint64, unknown int) string {
	switch {
	case total == nil && unknown == 0:
		return "-"
	case total == nil:
		return fmt.Sprintf("unknown (%d)", unknown)
	case unknown == 0:
		return strconv.FormatUint(*total, 10)
	}
	return fmt.Sprintf("%d + %d unknown", *total, unknown)
}

// cached renders the calls the response cache answered: "-" when none,
// else "3 calls, 1200 tokens".
func cached(calls int, tokens uint64) string {
	if calls == 0 {
		return "-"
	}
	return fmt.Sprintf("%d calls, %d tokens", calls, tokens)
}

// evaluator renders the evaluators' cost with its calls: "-" when none
// was made.
func evaluator(e EvaluatorUsage) string {
	if e.Calls == 0 {
		return "-"
	}
	return fmt.Sprintf("%s (%d calls)", known(e.Cost, e.CostUnknown), e.Calls)
}

// contextCost renders the context summaries' cost and tokens with their
// calls.
func contextCost(c ContextUsage) string {
	return fmt.Sprintf("%s %s, %s tokens (%d calls)", known(c.Cost, c.CostUnknown), UnitCost, known(c.Tokens, c.TokensUnknown), c.Calls)
}

// cell renders a total for CSV: empty when unknown, never 0.
func cell(total *uint64) string {
	if total == nil {
		return ""
	}
	return strconv.FormatUint(*total, 10)
}

// passAt renders pass@k as a percentage, as the pass rate is.
func passAt(t TreatmentReport, k int) string {
	for _, p := range t.PassAtK {
		if p.K == k {
			return fmt.Sprintf("%.1f%%", 100*p.Value)
		}
	}
	return "-"
}

// WriteCSV writes one row per treatment with every column of the report
// (docs/report.md); an undefined statistic is an empty cell, never 0.
func WriteCSV(w io.Writer, r Report) error {
	cw := csv.NewWriter(w)
	head := []string{"suite", "split", "treatment", "planned", "started", "ended", "graded", "passed", "failed", "pending",
		"invalid", "abstained", "excluded", "harness_errors", "retried", "awaiting", "disputed", "conflicted", "pass_rate", "wilson_lo", "wilson_hi",
		"clustered_se"}
	for k := 1; k <= int(r.Trials); k++ {
		head = append(head, fmt.Sprintf("pass_at_%d", k))
	}
	head = append(head, "tokens", "tokens_known", "tokens_unknown", "cost_units", "cost_known", "cost_unknown", "wall_millis", "wall_known",
		"evaluator_calls", "evaluator_tokens", "evaluator_tokens_unknown", "evaluator_cost_units", "evaluator_cost_unknown", "evaluator_millis",
		"cached_calls", "cached_tokens", "turns", "input_tokens", "output_tokens", "split_known", "split_unknown",
		"cached_input_tokens", "cached_input_known", "reasoning_tokens", "reasoning_known",
		"context_calls", "context_tokens", "context_tokens_unknown", "context_cost_units", "context_cost_unknown",
		"retried_runs", "retried_tokens", "retried_tokens_unknown", "retried_cost_units", "retried_cost_unknown", "retried_wall_millis", "retried_turns")
	scorers := reportScorers(r)
	for _, sc := range scorers {
		for _, col := range scoreColumns {
			head = append(head, "score_"+sc+"_"+col)
		}
	}
	if err := cw.Write(head); err != nil {
		return err
	}
	f := csvFloat('g')
	for _, t := range r.Treatments {
		var lo, hi *float64
		if t.Wilson != nil {
			lo, hi = &t.Wilson.Lo, &t.Wilson.Hi
		}
		rec := []string{r.Suite, r.Split, t.Treatment, itoa(t.Planned), itoa(t.Started), itoa(t.Ended), itoa(t.Graded),
			itoa(t.Passed), itoa(t.Failed), itoa(t.Pending), itoa(t.Invalid), itoa(t.Abstained), itoa(t.Excluded),
			itoa(t.HarnessErrors), itoa(t.Retried), itoa(t.Awaiting), itoa(t.Disputed), itoa(t.Conflicted), f(t.PassRate), f(lo), f(hi), f(t.ClusteredSE)}
		for k := 1; k <= int(r.Trials); k++ {
			v := ""
			for _, p := range t.PassAtK {
				if p.K == k {
					v = strconv.FormatFloat(p.Value, 'g', -1, 64)
				}
			}
			rec = append(rec, v)
		}
		u := t.Usage
		rec = append(rec, cell(u.Tokens), itoa(u.TokensKnown), itoa(u.TokensUnknown),
			cell(u.Cost), itoa(u.CostKnown), itoa(u.CostUnknown), strconv.FormatUint(u.WallMillis, 10), itoa(u.WallKnown))
		e := t.Evaluator
		rec = append(rec, itoa(e.Calls), cell(e.Tokens), itoa(e.TokensUnknown), cell(e.Cost), itoa(e.CostUnknown), strconv.FormatUint(e.Millis, 10),
			itoa(u.CachedCalls), strconv.FormatUint(u.CachedTokens, 10), strconv.FormatUint(u.Turns, 10),
			cell(u.InputTokens), cell(u.OutputTokens), itoa(u.SplitKnown), itoa(u.SplitUnknown),
			cell(u.CachedInputTokens), itoa(u.CachedInputKnown), cell(u.ReasoningTokens), itoa(u.ReasoningKnown))
		c := ContextUsage{}
		if t.Context != nil {
			c = *t.Context
		}
		rec = append(rec, itoa(c.Calls), cell(c.Tokens), itoa(c.TokensUnknown), cell(c.Cost), itoa(c.CostUnknown))
		ru := RetriedUsage{}
		if t.RetriedUsage != nil {
			ru = *t.RetriedUsage
		}
		rec = append(rec, itoa(ru.Runs), cell(ru.Tokens), itoa(ru.TokensUnknown), cell(ru.Cost), itoa(ru.CostUnknown),
			strconv.FormatUint(ru.WallMillis, 10), strconv.FormatUint(ru.Turns, 10))
		rec = append(rec, scoreCells(t, scorers, f)...)
		if err := cw.Write(rec); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}

// WriteSVG draws the pass rate of every treatment as a bar with its 95%
// Wilson interval as an error bar, on a 0–100% axis. A treatment with no
// graded attempt gets no bar and says so.
func WriteSVG(w io.Writer, r Report) error {
	const (
		left, top, plotH, bottom, right = 56, 72, 240, 76, 24
		minWidth, minSlot, barW         = 640, 120, 56
	)
	n := max(len(r.Treatments), 1)
	slot := max(minSlot, (minWidth-left-right)/n)
	width := left + n*slot + right
	height := top + plotH + bottom
	y := func(p float64) float64 { return float64(top) + float64(plotH)*(1-p) }
	var b strings.Builder
	esc := html.EscapeString
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">`+"\n",
		width, height, width, height)
	fmt.Fprintf(&b, `<rect width="%d" height="%d" fill="white"/>`+"\n", width, height)
	fmt.Fprintf(&b, `<text x="12" y="22" font-size="14" font-weight="bold">%s (split %s): pass rate with 95%% Wilson interval</text>`+"\n",
		esc(r.Suite), esc(r.Split))
	fmt.Fprintf(&b, `<text x="12" y="40" fill="#555">%d cases × %d trials, %s; pass rate = passed / graded</text>`+"\n",
		len(r.Cases), r.Trials, esc(r.State()))
	for _, g := range []float64{0, 0.25, 0.5, 0.75, 1} {
		fmt.Fprintf(&b, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#ddd"/>`+"\n", left, y(g), width-right, y(g))
		fmt.Fprintf(&b, `<text x="%d" y="%.1f" text-anchor="end" fill="#555">%d%%</text>`+"\n", left-6, y(g)+4, int(g*100))
	}
	fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="#333"/>`+"\n", left, top, left, top+plotH)
	for i, t := range r.Treatments {
		cx := left + i*slot + slot/2
		fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="middle">%s</text>`+"\n", cx, top+plotH+18, esc(t.Treatment))
		fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="middle" fill="#555">%d passed of %d graded</text>`+"\n", cx, top+plotH+34, t.Passed, t.Graded)
		if t.PassRate == nil {
			fmt.Fprintf(&b, `<text x="%d" y="%.1f" text-anchor="middle" fill="#999">no graded attempt</text>`+"\n", cx, y(0.5))
			continue
		}
		p := *t.PassRate
		fmt.Fprintf(&b, `<rect x="%d" y="%.1f" width="%d" height="%.1f" fill="#4a7ab5"><title>%s: %.1f%%</title></rect>`+"\n",
			cx-barW/2, y(p), barW, float64(plotH)*p, esc(t.Treatment), 100*p)
		label, labelY := fmt.Sprintf("%.0f%%", 100*p), y(p)-6
		if iv := t.Wilson; iv != nil {
			fmt.Fprintf(&b, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#222" stroke-width="2"/>`+"\n", cx, y(iv.Lo), cx, y(iv.Hi))
			for _, e := range []float64{iv.Lo, iv.Hi} {
				fmt.Fprintf(&b, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#222" stroke-width="2"/>`+"\n", cx-10, y(e), cx+10, y(e))
			}
			label += fmt.Sprintf(" [%.0f, %.0f]", 100*iv.Lo, 100*iv.Hi)
			labelY = y(iv.Hi) - 6
		}
		fmt.Fprintf(&b, `<text x="%d" y="%.1f" text-anchor="middle" fill="#222">%s</text>`+"\n", cx, labelY, label)
	}
	fmt.Fprintf(&b, `<text x="12" y="%d" fill="#555">Not in the rate: pending, invalid, abstained, disputed and excluded attempts (see the table).</text>`+"\n",
		height-10)
	b.WriteString("</svg>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// orUnknown renders a figure that may be unknown.
func orUnknown(v *uint64) string {
	if v == nil {
		return "unknown"
	}
	return strconv.FormatUint(*v, 10)
}

// knownOf is a usage total with its unknown count: "1200", "1200 + 2
// unknown", or "unknown (3)" when none is known.
func knownOf(total *uint64, unknown int) string {
	switch {
	case total == nil:
		return fmt.Sprintf("unknown (%d)", unknown)
	case unknown > 0:
		return fmt.Sprintf("%d + %d unknown", *total, unknown)
	}
	return strconv.FormatUint(*total, 10)
}
