package whatif

import (
	"fmt"
	"html"
	"io"
	"strings"
)

// WriteSVG draws the trade-off: one point per policy, tokens saved across
// and false stops up, so the policies that save most for fewest false stops
// sit bottom right. Both axes carry ticks with their values, and every
// label is kept inside the plot. It needs no script and no external asset.
func (r Report) WriteSVG(w io.Writer) error {
	const (
		width, height = 640, 400
		left, right   = 70, 40
		top, bottom   = 30, 60
		fontSize      = 12
	)
	maxX, maxY := uint64(0), uint64(0)
	for _, s := range r.Candidates {
		maxX = max(maxX, s.Saved.InputTokens+s.Saved.OutputTokens)
		maxY = max(maxY, uint64(s.FalseStops))
	}
	xTicks, yTicks := ticks(maxX), ticks(maxY)
	spanX, spanY := xTicks[len(xTicks)-1], yTicks[len(yTicks)-1]
	px := func(v uint64) float64 { return left + float64(v)/float64(spanX)*(width-left-right) }
	py := func(v uint64) float64 { return height - bottom - float64(v)/float64(spanY)*(height-top-bottom) }
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="%d">`+"\n", width, height, width, height, fontSize)
	fmt.Fprintf(&b, `<title>false stops against tokens saved, one point per stall policy (%d runs)</title>`+"\n", r.Runs)
	fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="black"/>`+"\n", left, height-bottom, width-right, height-bottom)
	fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="black"/>`+"\n", left, top, left, height-bottom)
	for _, v := range xTicks {
		x := px(v)
		fmt.Fprintf(&b, `<line class="tick-x" x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="black"/>`+"\n", x, height-bottom, x, height-bottom+5)
		fmt.Fprintf(&b, `<text class="tick-x" x="%.1f" y="%d" text-anchor="middle">%d</text>`+"\n", x, height-bottom+18, v)
	}
	for _, v := range yTicks {
		y := py(v)
		fmt.Fprintf(&b, `<line class="tick-y" x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="black"/>`+"\n", left-5, y, left, y)
		fmt.Fprintf(&b, `<text class="tick-y" x="%d" y="%.1f" text-anchor="end">%d</text>`+"\n", left-8, y+4, v)
	}
	fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="middle">tokens saved</text>`+"\n", (left+width-right)/2, height-15)
	fmt.Fprintf(&b, `<text x="20" y="%d" text-anchor="middle" transform="rotate(-90 20 %d)">false stops</text>`+"\n", (top+height-bottom)/2, (top+height-bottom)/2)
	for _, s := range r.Candidates {
		x, y := px(s.Saved.InputTokens+s.Saved.OutputTokens), py(uint64(s.FalseStops))
		name := html.EscapeString(s.Candidate.Name)
		fmt.Fprintf(&b, `<circle cx="%.1f" cy="%.1f" r="5" fill="steelblue"><title>%s: %d false stops, %d true stalls, %d tokens saved, %d later (unknown)</title></circle>`+"\n",
			x, y, name, s.FalseStops, s.TrueStalls, s.Saved.InputTokens+s.Saved.OutputTokens, s.Later)
		lx, ly, anchor := labelAt(x, y, textWidth(s.Candidate.Name, fontSize), width, fontSize)
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="%s">%s</text>`+"\n", lx, ly, anchor, name)
	}
	b.WriteString("</svg>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// textWidth over-estimates how wide a label is drawn: 0.6 em a character,
// more than a sans-serif font's average, so a label placed by it fits.
func textWidth(s string, fontSize float64) float64 {
	return float64(len([]rune(s))) * 0.6 * fontSize
}

// labelAt places a point's label above it, to its right, or to its left
// where the right would run past the plot's edge, and never past the left
// one; below the point when above would leave the plot.
func labelAt(x, y, w, width, fontSize float64) (lx, ly float64, anchor string) {
	const gap, margin = 8, 2
	lx, anchor = x+gap, "start"
	switch {
	case lx+w <= width-margin:
	case x-gap-w >= margin:
		lx, anchor = x-gap, "end"
	default:
		lx = max(margin, width-margin-w)
	}
	ly = y - gap
	if ly-fontSize < 0 {
		ly = y + gap + fontSize
	}
	return lx, ly, anchor
}

// ticks are an axis's tick values: 0 up to the first multiple of a round
// step (1, 2 or 5 times a power of ten) at or above top, at most six
// values, never fewer than three.
func ticks(top uint64) []uint64 {
	step := uint64(1)
	for mag := uint64(1); step*5 < top; mag *= 10 {
		for _, m := range []uint64{1, 2, 5} {
			if step = m * mag; step*5 >= top {
				break
			}
		}
	}
	n := max(2, (top+step-1)/step)
	out := make([]uint64, 0, n+1)
	for i := uint64(0); i <= n; i++ {
		out = append(out, i*step)
	}
	return out
}
