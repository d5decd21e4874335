package measure

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/factline/factline/stats"
)

// CaseRow is one case under one treatment: its trials and how they
// landed, read from the report's attempt rows (never recomputed
// otherwise).
type CaseRow struct {
	Case      string    `json:"case"`
	Treatment string    `json:"treatment"`
	Trials    int       `json:"trials"`
	Graded    int       `json:"graded"`
	Passed    int       `json:"passed"`
	Failed    int       `json:"failed"`
	Other     int       `json:"other"` // pending, invalid, abstained, excluded, disputed or awaiting
	PassRate  *float64  `json:"pass_rate"`
	PassAtK   []PassAtK `json:"pass_at_k,omitempty"`
	Tokens    *uint64   `json:"tokens"`
	Cost      *uint64   `json:"cost"`
	// TokensUnknown and CostUnknown count ended trials whose usage is not
	// known: a total with unknowns beside it is a lower bound.
	TokensUnknown int `json:"tokens_unknown"`
	CostUnknown   int `json:"cost_unknown"`
	// CachedCalls and CachedTokens are the ended trials' model calls the
	// response cache answered, and their tokens (part of Tokens).
	CachedCalls  int    `json:"cached_calls"`
	CachedTokens uint64 `json:"cached_tokens"`
	// InputTokens and OutputTokens split Tokens over the ended trials
	// whose split is known; SplitUnknown counts the others.
	InputTokens  *uint64 `json:"input_tokens"`
	OutputTokens *uint64 `json:"output_tokens"`
	SplitUnknown int     `json:"split_unknown"`
	// Turns sums the ended trials' model turns, WallMillis their wall
	// time in milliseconds.
	Turns      uint64 `json:"turns"`
	WallMillis uint64 `json:"wall_millis"`
	// Scores are each scorer's mean over the case's graded trials with a
	// value under the treatment (docs/report.md#scores).
	Scores []CaseScore `json:"scores,omitempty"`
}

// CaseScore is one scorer's mean on one case under one treatment: over
// the trials graded passed or failed with a value, Missing counting the
// graded ones without.
type CaseScore struct {
	Scorer  string   `json:"scorer"`
	Mean    *float64 `json:"mean"`
	Values  int      `json:"values"`
	Missing int      `json:"missing"`
}

// ByCase regroups a report's attempts by case and treatment, in the
// roster's order. pass@k is given for k = 1 and k = the trials graded.
func ByCase(r Report) []CaseRow {
	var rows firstSeen[[2]string, CaseRow]
	for _, a := range r.Attempts {
		row := rows.row([2]string{a.Case, a.Treatment}, CaseRow{Case: a.Case, Treatment: a.Treatment})
		row.Trials++
		switch a.Outcome {
		case OutcomePassed:
			row.Passed++
			row.Graded++
		case OutcomeFailed:
			row.Failed++
			row.Graded++
		default:
			row.Other++
		}
		if a.Status != "" {
			sumKnown(&row.Tokens, a.Tokens, nil, &row.TokensUnknown)
			sumKnown(&row.Cost, a.Cost, nil, &row.CostUnknown)
			row.CachedCalls += a.CachedCalls
			row.CachedTokens += a.CachedTokens
			if a.InputTokens != nil {
				add(&row.InputTokens, *a.InputTokens)
				add(&row.OutputTokens, *a.OutputTokens)
			} else {
				row.SplitUnknown++
			}
			if a.Turns != nil {
				row.Turns += uint64(*a.Turns)
			}
			if a.Millis != nil {
				row.WallMillis += *a.Millis
			}
		}
	}
	out := rows.rows
	scorers := scorerOrder(r.Attempts)
	declared := declaring(r.Attempts)
	for i := range out {
		row := &out[i]
		row.Scores = caseScores(r.Attempts, row.Case, row.Treatment, scorers, declared)
		if row.Graded == 0 {
			continue
		}
		row.PassRate = ptr(float64(row.Passed) / float64(row.Graded))
		for _, k := range []int{1, row.Graded} {
			if len(row.PassAtK) > 0 && row.PassAtK[len(row.PassAtK)-1].K == k {
				continue
			}
			if v, err := stats.PassAtK(row.Graded, row.Passed, k); err == nil {
				row.PassAtK = append(row.PassAtK, PassAtK{K: k, Value: v, Cases: 1})
			}
		}
	}
	return out
}

// WriteCaseTable writes the rows as a table; a "cached" column (calls the
// response cache answered) only when some row has one, so that a suite
// without a cache keeps its width. pass@1 of one case is its pass rate,
// so the table shows the rate once (JSON and CSV keep both).
func WriteCaseTable(w io.Writer, rows []CaseRow) error {
	tw := tabwriter.NewWriter(w, 0, 0, 1, ' ', 0)
	anyCached := false
	for _, r := range rows {
		anyCached = anyCached || r.CachedCalls > 0
	}
	anyScores := false
	for _, r := range rows {
		anyScores = anyScores || len(r.Scores) > 0
	}
	head := "case\ttreatment\ttrials\tpassed\tfailed\tother\tpass rate\tpass@n\ttokens\tcost (" + UnitCost + ")"
	if anyCached {
		head += "\tcached"
	}
	if anyScores {
		head += "\tscores (mean on [0, 1], values)"
	}
	fmt.Fprintln(tw, head)
	for _, r := range rows {
		pn := "-"
		if len(r.PassAtK) > 0 {
			last := r.PassAtK[len(r.PassAtK)-1]
			pn = fmt.Sprintf("%.1f%% (n=%d)", 100*last.Value, last.K)
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%d\t%s\t%s\t%s\t%s", r.Case, r.Treatment, r.Trials, r.Passed, r.Failed, r.Other,
			pct(r.PassRate), pn, known(r.Tokens, r.TokensUnknown), known(r.Cost, r.CostUnknown))
		if anyCached {
			fmt.Fprintf(tw, "\t%d", r.CachedCalls)
		}
		if anyScores {
			var cells []string
			for _, s := range r.Scores {
				cells = append(cells, fmt.Sprintf("%s %s (%d)", s.Scorer, num(s.Mean, "%.3f"), s.Values))
			}
			fmt.Fprintf(tw, "\t%s", strings.Join(cells, ", "))
		}
		fmt.Fprintln(tw)
	}
	return tw.Flush()
}

// WriteCaseJSON writes the rows as an indented JSON array.
func WriteCaseJSON(w io.Writer, rows []CaseRow) error {
	if rows == nil {
		rows = []CaseRow{}
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(rows)
}

// WriteCaseCSV writes the rows as CSV; an unknown total is an empty cell.
func WriteCaseCSV(w io.Writer, rows []CaseRow) error {
	cw := csv.NewWriter(w)
	_ = cw.Write(append([]string{"case", "treatment", "trials", "graded", "passed", "failed", "other", "pass_rate", "pass_at_1", "pass_at_n", "n",
		"tokens", "tokens_unknown", "cost_units", "cost_unknown", "cached_calls", "cached_tokens",
		"input_tokens", "output_tokens", "split_unknown", "turns", "wall_millis"}, caseScoreHead(rows)...))
	for _, r := range rows {
		rate, p1, pn, n := "", "", "", ""
		if r.PassRate != nil {
			rate = strconv.FormatFloat(*r.PassRate, 'f', -1, 64)
		}
		if len(r.PassAtK) > 0 {
			p1 = strconv.FormatFloat(r.PassAtK[0].Value, 'f', -1, 64)
			last := r.PassAtK[len(r.PassAtK)-1]
			pn, n = strconv.FormatFloat(last.Value, 'f', -1, 64), strconv.Itoa(last.K)
		}
		_ = cw.Write(append([]string{r.Case, r.Treatment, itoa(r.Trials), itoa(r.Graded), itoa(r.Passed), itoa(r.Failed), itoa(r.Other),
			rate, p1, pn, n, cell(r.Tokens), itoa(r.TokensUnknown), cell(r.Cost), itoa(r.CostUnknown),
			itoa(r.CachedCalls), strconv.FormatUint(r.CachedTokens, 10),
			cell(r.InputTokens), cell(r.OutputTokens), itoa(r.SplitUnknown), strconv.FormatUint(r.Turns, 10), strconv.FormatUint(r.WallMillis, 10)},
			caseScoreCells(r, caseScoreIDs(rows))...))
	}
	cw.Flush()
	return cw.Error()
}
