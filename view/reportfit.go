package view

import (
	"slices"
	"strconv"
	"strings"
)

// coreCounts are the count columns the suite page's report table always
// shows; the others (pending, invalid, excluded, harness errors …) only
// when some treatment has one.
var coreCounts = []string{"planned", "started", "ended", "graded", "passed", "failed"}

// maxPassAtK is how many pass@k columns the table shows: pass@1, and the
// largest k when there are more (every k is in the page data).
const maxPassAtK = 3

// fitReport narrows the report table so that it fits a 1,400 px window
// without scrolling sideways (it once ran to 1,640 px and hid pass@k,
// tokens and cost): a count column that is 0 for every treatment is left
// out and named in zero instead, and of many pass@k columns only the
// first and the last are kept, in skipped. Every cell left is the
// report's, unchanged.
func fitReport(head []string, rows []treatmentRow) (outHead []string, outRows []treatmentRow, zero, skipped []string) {
	if len(rows) == 0 {
		return head, rows, nil, nil
	}
	var passAt []int // the columns of pass@k
	drop := make([]bool, len(head))
	for i, c := range rows[0].Cells {
		switch {
		case isCount(c.Field) && !slices.Contains(coreCounts, c.Field) && allZero(rows, i):
			drop[i] = true
			zero = append(zero, head[i])
		case strings.HasPrefix(c.Field, "pass_at_k."):
			passAt = append(passAt, i)
		}
	}
	if len(passAt) > maxPassAtK {
		for _, i := range passAt[1 : len(passAt)-1] {
			drop[i] = true
			skipped = append(skipped, head[i])
		}
	}
	for i, h := range head {
		if !drop[i] {
			outHead = append(outHead, h)
		}
	}
	for _, r := range rows {
		out := treatmentRow{Treatment: r.Treatment}
		for i, c := range r.Cells {
			if !drop[i] {
				out.Cells = append(out.Cells, c)
			}
		}
		outRows = append(outRows, out)
	}
	return outHead, outRows, zero, skipped
}

// isCount says whether a field is one of the table's count columns.
func isCount(field string) bool {
	return slices.ContainsFunc(countColumns, func(c struct{ Field, Head string }) bool { return c.Field == field })
}

// allZero says whether column i is 0 in every row.
func allZero(rows []treatmentRow, i int) bool {
	for _, r := range rows {
		if i >= len(r.Cells) {
			return false
		}
		if n, err := strconv.Atoi(r.Cells[i].Raw); err != nil || n != 0 {
			return false
		}
	}
	return true
}
