package whatif

import (
	"fmt"
	"html"
	"io"
	"strings"
)

// WriteSVG draws the trade-off: one point per policy, tokens saved across
// and false stops up, so the policies that save most for fewest false stops
// sit bottom right. It needs no script and no external asset.
func (r Report) WriteSVG(w io.Writer) error {
	const (
		width, height = 640, 400
		left, right   = 70, 30
		top, bottom   = 30, 60
	)
	maxX, maxY := uint64(1), 1
	for _, s := range r.Candidates {
		maxX = max(maxX, s.Saved.InputTokens+s.Saved.OutputTokens)
		maxY = max(maxY, s.FalseStops)
	}
	px := func(v uint64) float64 { return left + float64(v)/float64(maxX)*(width-left-right) }
	py := func(v int) float64 { return height - bottom - float64(v)/float64(maxY)*(height-top-bottom) }
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">`+"\n", width, height, width, height)
	fmt.Fprintf(&b, `<title>false stops against tokens saved, one point per stall policy (%d runs)</title>`+"\n", r.Runs)
	fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="black"/>`+"\n", left, height-bottom, width-right, height-bottom)
	fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="black"/>`+"\n", left, top, left, height-bottom)
	fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="middle">tokens saved (max %d)</text>`+"\n", (left+width-right)/2, height-20, maxX)
	fmt.Fprintf(&b, `<text x="15" y="%d" text-anchor="middle" transform="rotate(-90 15 %d)">false stops (max %d)</text>`+"\n", (top+height-bottom)/2, (top+height-bottom)/2, maxY)
	for _, s := range r.Candidates {
		x, y := px(s.Saved.InputTokens+s.Saved.OutputTokens), py(s.FalseStops)
		name := html.EscapeString(s.Candidate.Name)
		fmt.Fprintf(&b, `<circle cx="%.1f" cy="%.1f" r="5" fill="steelblue"><title>%s: %d false stops, %d true stalls, %d tokens saved, %d later (unknown)</title></circle>`+"\n",
			x, y, name, s.FalseStops, s.TrueStalls, s.Saved.InputTokens+s.Saved.OutputTokens, s.Later)
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f">%s</text>`+"\n", x+8, y-8, name)
	}
	b.WriteString("</svg>\n")
	_, err := io.WriteString(w, b.String())
	return err
}
