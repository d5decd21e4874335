package view

import (
	"fmt"
	"html"
	"html/template"
	"slices"
	"strings"

	"github.com/factline/factline/view/pages"
)

// The plots are drawn on the server as inline SVG: no script, no library,
// nothing fetched, so the viewer works offline and a screenshot is the
// page. Every string drawn is escaped; every number comes from the report.

// outcomeColour is the colour of an outcome in the grid and the plots; an
// outcome the meter adds later gets the neutral one.
func outcomeColour(outcome string) string {
	switch outcome {
	case "passed":
		return "#2e7d32"
	case "failed":
		return "#c62828"
	case "pending":
		return "#f9a825"
	case "invalid":
		return "#6a1b9a"
	case "abstained":
		return "#8d6e63"
	case "excluded":
		return "#9e9e9e"
	case "awaiting":
		return "#90caf9"
	case "disputed":
		return "#ef6c00"
	}
	return "#607d8b"
}

const (
	plotW     = 600
	plotLeft  = 150
	plotRight = 30
	rowH      = 30
)

// axis draws vertical grid lines with labels at the given values, mapped
// by x, below a plot of the given height.
func axis(b *strings.Builder, top, height int, ticks []float64, x func(float64) float64, label func(float64) string) {
	for _, v := range ticks {
		fmt.Fprintf(b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#ddd"/>`, x(v), top, x(v), top+height)
		fmt.Fprintf(b, `<text x="%.1f" y="%d" text-anchor="middle" fill="#555">%s</text>`, x(v), top+height+14, html.EscapeString(label(v)))
	}
}

// passRatePlot draws each treatment's pass rate as a dot with its 95%
// Wilson interval.
func passRatePlot(r *reportView) template.HTML {
	n := len(r.Treatments)
	top, height := 24, max(n, 1)*rowH
	w, h := plotW, top+height+24
	x := func(p float64) float64 { return plotLeft + p*float64(plotW-plotLeft-plotRight) }
	var b strings.Builder
	fmt.Fprintf(&b, `<svg class="plot" role="img" aria-label="pass rate per treatment with 95%% Wilson interval" xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">`, w, h, w, h)
	b.WriteString(`<text x="4" y="14" font-weight="bold">pass rate (passed / graded), 95% Wilson interval</text>`)
	axis(&b, top, height, []float64{0, .25, .5, .75, 1}, x, func(v float64) string { return fmt.Sprintf("%.0f%%", 100*v) })
	for i, t := range r.Treatments {
		y := float64(top + i*rowH + rowH/2)
		fmt.Fprintf(&b, `<text x="%d" y="%.1f" text-anchor="end">%s</text>`, plotLeft-8, y+4, html.EscapeString(t.Treatment))
		if t.PassRate == nil {
			fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" fill="#999">no graded attempt</text>`, x(0)+6, y+4)
			continue
		}
		if iv := t.Wilson; iv != nil {
			fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#222" stroke-width="2"/>`, x(iv.Lo), y, x(iv.Hi), y)
			for _, e := range []float64{iv.Lo, iv.Hi} {
				fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#222" stroke-width="2"/>`, x(e), y-6, x(e), y+6)
			}
		}
		fmt.Fprintf(&b, `<circle cx="%.1f" cy="%.1f" r="5" fill="#4a7ab5"><title>%s: %d/%d = %.1f%%</title></circle>`,
			x(*t.PassRate), y, html.EscapeString(t.Treatment), t.Passed, t.Graded, 100**t.PassRate)
	}
	b.WriteString(`</svg>`)
	return template.HTML(b.String())
}

// differencePlot draws each comparison's paired difference (A − B, in
// percentage points) with its bootstrap interval, around zero.
func differencePlot(r *reportView) template.HTML {
	n := len(r.Comparisons)
	top, height := 24, max(n, 1)*rowH
	w, h := plotW, top+height+24
	x := func(d float64) float64 { return plotLeft + (d+1)/2*float64(plotW-plotLeft-plotRight) }
	var b strings.Builder
	fmt.Fprintf(&b, `<svg class="plot" role="img" aria-label="paired differences with 95%% bootstrap intervals" xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">`, w, h, w, h)
	b.WriteString(`<text x="4" y="14" font-weight="bold">paired difference A − B (points), 95% cluster bootstrap interval</text>`)
	axis(&b, top, height, []float64{-1, -.5, 0, .5, 1}, x, func(v float64) string { return fmt.Sprintf("%+.0f", 100*v) })
	fmt.Fprintf(&b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#888"/>`, x(0), top, x(0), top+height)
	for i, c := range r.Comparisons {
		y := float64(top + i*rowH + rowH/2)
		fmt.Fprintf(&b, `<text x="%d" y="%.1f" text-anchor="end">%s − %s</text>`, plotLeft-8, y+4, html.EscapeString(c.A), html.EscapeString(c.B))
		d := c.Difference
		if d == nil {
			fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" fill="#999">no graded pair yet</text>`, x(-1)+6, y+4)
			continue
		}
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#222" stroke-width="2"/>`, x(d.Interval.Lo), y, x(d.Interval.Hi), y)
		for _, e := range []float64{d.Interval.Lo, d.Interval.Hi} {
			fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#222" stroke-width="2"/>`, x(e), y-6, x(e), y+6)
		}
		fmt.Fprintf(&b, `<rect x="%.1f" y="%.1f" width="10" height="10" fill="#b5524a"><title>%s − %s = %+.1f pts [%+.1f, %+.1f] over %d pairs</title></rect>`,
			x(d.Estimate)-5, y-5, html.EscapeString(c.A), html.EscapeString(c.B), 100*d.Estimate, 100*d.Interval.Lo, 100*d.Interval.Hi, c.Pairs)
	}
	b.WriteString(`</svg>`)
	return template.HTML(b.String())
}

// mixPlot draws each treatment's outcome mix as a stacked bar of its
// planned attempts.
func mixPlot(mix []pages.Mix) template.HTML {
	n := len(mix)
	top, height := 24, max(n, 1)*rowH
	seen := []string{}
	for _, m := range mix {
		for _, c := range m.Counts {
			if !slices.Contains(seen, c.Outcome) {
				seen = append(seen, c.Outcome)
			}
		}
	}
	w, h := plotW, top+height+28
	var b strings.Builder
	fmt.Fprintf(&b, `<svg class="plot" role="img" aria-label="outcome mix per treatment" xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">`, w, h, w, h)
	b.WriteString(`<text x="4" y="14" font-weight="bold">outcome of every planned attempt</text>`)
	span := float64(plotW - plotLeft - plotRight)
	for i, m := range mix {
		y := top + i*rowH + 6
		fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="end">%s</text>`, plotLeft-8, y+13, html.EscapeString(m.Treatment))
		total := 0
		for _, c := range m.Counts {
			total += c.N
		}
		at := float64(plotLeft)
		for _, c := range m.Counts {
			wd := span * float64(c.N) / float64(max(total, 1))
			fmt.Fprintf(&b, `<rect x="%.1f" y="%d" width="%.1f" height="18" fill="%s"><title>%s: %d of %d</title></rect>`,
				at, y, wd, outcomeColour(c.Outcome), html.EscapeString(c.Outcome), c.N, total)
			if wd > 18 {
				fmt.Fprintf(&b, `<text x="%.1f" y="%d" text-anchor="middle" fill="white">%d</text>`, at+wd/2, y+13, c.N)
			}
			at += wd
		}
	}
	lx := plotLeft
	for _, o := range seen {
		fmt.Fprintf(&b, `<rect x="%d" y="%d" width="10" height="10" fill="%s"/><text x="%d" y="%d">%s</text>`,
			lx, h-14, outcomeColour(o), lx+14, h-5, html.EscapeString(o))
		lx += 24 + 7*len(o)
	}
	b.WriteString(`</svg>`)
	return template.HTML(b.String())
}

// scorePlot draws each scorer's mean per treatment as a dot with its 95%
// cluster bootstrap interval, on the [0, 1] its scale maps onto.
func scorePlot(r *reportView) template.HTML {
	type row struct {
		label string
		s     scoreView
	}
	var rows []row
	for _, t := range r.Treatments {
		for _, s := range t.Scores {
			rows = append(rows, row{t.Treatment + " · " + s.Scorer, s})
		}
	}
	top, height := 24, max(len(rows), 1)*rowH
	w, h := plotW, top+height+24
	x := func(p float64) float64 { return plotLeft + p*float64(plotW-plotLeft-plotRight) }
	var b strings.Builder
	fmt.Fprintf(&b, `<svg class="plot" id="score-plot" role="img" aria-label="mean score per treatment and scorer with 95%% bootstrap interval" xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">`, w, h, w, h)
	b.WriteString(`<text x="4" y="14" font-weight="bold">mean score on [0, 1], 95% cluster bootstrap interval</text>`)
	axis(&b, top, height, []float64{0, .25, .5, .75, 1}, x, func(v float64) string { return fmt.Sprintf("%.2g", v) })
	for i, rw := range rows {
		y := float64(top + i*rowH + rowH/2)
		fmt.Fprintf(&b, `<text x="%d" y="%.1f" text-anchor="end">%s</text>`, plotLeft-8, y+4, html.EscapeString(rw.label))
		s := rw.s
		if s.Mean == nil {
			fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" fill="#999">no value</text>`, x(0)+6, y+4)
			continue
		}
		if iv := s.Interval; iv != nil {
			fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#222" stroke-width="2"/>`, x(iv.Lo), y, x(iv.Hi), y)
			for _, e := range []float64{iv.Lo, iv.Hi} {
				fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#222" stroke-width="2"/>`, x(e), y-6, x(e), y+6)
			}
		}
		fmt.Fprintf(&b, `<circle cx="%.1f" cy="%.1f" r="5" fill="#5a9a5a"><title>%s: mean %.3f over %d values</title></circle>`,
			x(*s.Mean), y, html.EscapeString(rw.label), *s.Mean, s.Values)
	}
	b.WriteString(`</svg>`)
	return template.HTML(b.String())
}
