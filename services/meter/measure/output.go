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

	"github.com/factline/factline/events"
)

// WriteJSON writes the report as indented JSON: the form stored as the
// report blob that suite.reported names.
func WriteJSON(w io.Writer, r Report) error {
	b, err := EncodeJSON(r)
	if err != nil {
		return err
	}
	_, err = w.Write(b)
	return err
}

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
		state += fmt.Sprintf("; stopped early after %d pairs: %s, %s [%+.1f, %+.1f] pts at %.1f%% (anytime-valid)",
			st.Pairs, st.Comparison, what, float64(st.Low)/10, float64(st.High)/10, float64(st.Confidence)/10)
	}
	return state
}

func pct(p *float64) string {
	if p == nil {
		return "-"
	}
	return fmt.Sprintf("%.1f%%", 100**p)
}

func num(p *float64, format string) string {
	if p == nil {
		return "-"
	}
	return fmt.Sprintf(format, *p)
}

// WriteTable writes the report as a terminal table that fits 100
// columns: a heading, one row per treatment with the attempts ended of
// planned, the counts that decide it (what is neither passed nor failed is
// "other", broken down below the table), pass rate with its interval,
// pass@1 and pass@n, and usage; then the comparisons. WriteWideTable has
// every column.
func WriteTable(w io.Writer, r Report) error {
	writeHeading(w, r)
	tw := tabwriter.NewWriter(w, 0, 0, 1, ' ', tabwriter.AlignRight)
	head := []string{"treatment", "ended", "passed", "failed", "other", "pass rate", "95% Wilson", "pass@1"}
	if r.Trials > 1 {
		head = append(head, fmt.Sprintf("pass@%d", r.Trials))
	}
	head = append(head, "tokens", "cost")
	fmt.Fprintln(tw, strings.Join(head, "\t")+"\t")
	var notes []string
	for _, t := range r.Treatments {
		other := t.Pending + t.Invalid + t.Abstained + t.Excluded + t.Awaiting + t.Disputed
		ci := "-"
		if t.Wilson != nil {
			ci = fmt.Sprintf("[%.1f, %.1f]", 100*t.Wilson.Lo, 100*t.Wilson.Hi)
		}
		cells := []string{t.Treatment, fmt.Sprintf("%d/%d", t.Ended, t.Planned), itoa(t.Passed), itoa(t.Failed), itoa(other),
			pct(t.PassRate), ci, passAt(t, 1, "%.3f")}
		if r.Trials > 1 {
			cells = append(cells, passAt(t, int(r.Trials), "%.3f"))
		}
		cells = append(cells, total(t.Usage.Tokens, t.Usage.TokensUnknown), total(t.Usage.Cost, t.Usage.CostUnknown))
		fmt.Fprintln(tw, strings.Join(cells, "\t")+"\t")
		if n := breakdown(t); n != "" {
			notes = append(notes, fmt.Sprintf("  %s: %s", t.Treatment, n))
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(notes) > 0 {
		fmt.Fprintln(w, "other, and what the columns leave out (report --wide, --json or --csv has every column):")
		for _, n := range notes {
			fmt.Fprintln(w, n)
		}
	}
	return writeComparisons(w, r)
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
	if u := t.Usage; u.CachedCalls > 0 {
		parts = append(parts, "served from the response cache "+cached(u.CachedCalls, u.CachedTokens))
	}
	if e := t.Evaluator; e.Calls > 0 {
		parts = append(parts, "evaluator cost "+evaluator(e))
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
	fmt.Fprintln(w)
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
	head = append(head, "tokens", "cost", "cached", "wall", "evaluator cost")
	fmt.Fprintln(tw, strings.Join(head, "\t")+"\t")
	for _, t := range r.Treatments {
		cells := []string{t.Treatment, itoa(t.Planned), itoa(t.Started), itoa(t.Ended), itoa(t.Graded), itoa(t.Passed),
			itoa(t.Failed), itoa(t.Pending), itoa(t.Invalid), itoa(t.Abstained), itoa(t.Excluded), itoa(t.HarnessErrors), itoa(t.Retried),
			itoa(t.Awaiting), itoa(t.Disputed), pct(t.PassRate), wilson(t), num(t.ClusteredSE, "%.3f")}
		for _, k := range ks {
			cells = append(cells, passAt(t, k, "%.3f"))
		}
		u := t.Usage
		cells = append(cells, known(u.Tokens, u.TokensUnknown), known(u.Cost, u.CostUnknown), cached(u.CachedCalls, u.CachedTokens),
			fmt.Sprintf("%.1fs", float64(u.WallMillis)/1000), evaluator(t.Evaluator))
		fmt.Fprintln(tw, strings.Join(cells, "\t")+"\t")
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	return writeComparisons(w, r)
}

// writeComparisons writes the comparisons below a table.
func writeComparisons(w io.Writer, r Report) error {
	if len(r.Comparisons) > 0 {
		fmt.Fprintln(w)
		fmt.Fprintf(w, "comparisons (paired on case and trial; cluster bootstrap, %d resamples, seed %d; McNemar exact):\n",
			r.Method.BootstrapResamples, r.Method.BootstrapSeed)
	}
	for _, c := range r.Comparisons {
		fmt.Fprintf(w, "  %s vs %s: %s", c.A, c.B, c.Label)
		if len(c.Differences) > 0 {
			fmt.Fprintf(w, " (%s)", strings.Join(c.Differences, ", "))
		}
		if c.Label == LabelUnknown && c.Note != "" {
			fmt.Fprintf(w, ": %s", c.Note)
		}
		fmt.Fprintf(w, "; %d pairs", c.Pairs)
		if c.Difference != nil {
			d := c.Difference
			fmt.Fprintf(w, "; %s − %s = %+.1f pts [%+.1f, %+.1f]", c.A, c.B, 100*d.Estimate, 100*d.Interval.Lo, 100*d.Interval.Hi)
		} else if c.RateA != nil && c.RateB != nil {
			fmt.Fprintf(w, "; %s − %s = %+.1f pts", c.A, c.B, 100*(*c.RateA-*c.RateB))
		}
		if c.McNemar != nil {
			fmt.Fprintf(w, "; McNemar %d/%d p=%.4g", c.McNemar.OnlyA, c.McNemar.OnlyB, c.McNemar.P)
		}
		if c.Withheld != "" {
			fmt.Fprintf(w, "; withheld: %s", c.Withheld)
		}
		fmt.Fprintln(w)
	}
	return nil
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

// cell renders a total for CSV: empty when unknown, never 0.
func cell(total *uint64) string {
	if total == nil {
		return ""
	}
	return strconv.FormatUint(*total, 10)
}

func passAt(t TreatmentReport, k int, format string) string {
	for _, p := range t.PassAtK {
		if p.K == k {
			return fmt.Sprintf(format, p.Value)
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
	head = append(head, "tokens", "tokens_known", "tokens_unknown", "cost", "cost_known", "cost_unknown", "wall_millis", "wall_known",
		"evaluator_calls", "evaluator_tokens", "evaluator_tokens_unknown", "evaluator_cost", "evaluator_cost_unknown", "evaluator_millis",
		"cached_calls", "cached_tokens")
	if err := cw.Write(head); err != nil {
		return err
	}
	f := func(p *float64) string {
		if p == nil {
			return ""
		}
		return strconv.FormatFloat(*p, 'g', -1, 64)
	}
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
			itoa(u.CachedCalls), strconv.FormatUint(u.CachedTokens, 10))
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
		fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="middle" fill="#555">%d/%d graded</text>`+"\n", cx, top+plotH+34, t.Passed, t.Graded)
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
