package view

import (
	"strings"
	"testing"
)

// fitReport leaves out only count columns that are 0 for every treatment
// (never the core ones) and the middle of a long run of pass@k columns,
// and moves no cell to another column.
func TestFitReportLeavesOutOnlyWhatSaysNothing(t *testing.T) {
	head := []string{"planned", "failed", "pending", "harness errors", "pass rate", "pass@1", "pass@2", "pass@3", "pass@4", "tokens"}
	fields := []string{"planned", "failed", "pending", "harness_errors", "pass_rate", "pass_at_k.1", "pass_at_k.2", "pass_at_k.3", "pass_at_k.4", "usage.tokens"}
	row := func(name string, raws ...string) treatmentRow {
		r := treatmentRow{Treatment: name}
		for i, f := range fields {
			r.Cells = append(r.Cells, cell{Field: f, Raw: raws[i], Text: raws[i]})
		}
		return r
	}
	rows := []treatmentRow{
		row("a", "4", "0", "0", "0", "0.5", "0.5", "0.6", "0.7", "0.8", "100"),
		row("b", "4", "0", "0", "1", "0.25", "0.25", "0.3", "0.4", "0.5", "null"),
	}
	h, out, zero, skipped := fitReport(head, rows)
	if got := strings.Join(h, ","); got != "planned,failed,harness errors,pass rate,pass@1,pass@4,tokens" {
		t.Fatalf("head %s", got)
	}
	if strings.Join(zero, ",") != "pending" || strings.Join(skipped, ",") != "pass@2,pass@3" {
		t.Fatalf("zero %v, skipped %v", zero, skipped)
	}
	for _, r := range out {
		if len(r.Cells) != len(h) {
			t.Fatalf("%s has %d cells for %d columns", r.Treatment, len(r.Cells), len(h))
		}
		for i, c := range r.Cells {
			if want := fields[indexOf(head, h[i])]; c.Field != want {
				t.Errorf("%s column %s holds %s", r.Treatment, h[i], c.Field)
			}
		}
	}
	if out[1].Cells[2].Raw != "1" {
		t.Fatalf("b's harness errors moved: %+v", out[1].Cells)
	}
}

func indexOf(xs []string, x string) int {
	for i, v := range xs {
		if v == x {
			return i
		}
	}
	return -1
}
