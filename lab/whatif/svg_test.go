package whatif_test

import (
	"bytes"
	"encoding/xml"
	"strconv"
	"strings"
	"testing"

	"github.com/factline/factline/lab/whatif"
)

// svgText is one <text> of the plot, as drawn.
type svgText struct {
	X, Y      float64
	Anchor    string
	Transform string
	Class     string
	Text      string
}

// svgOf draws a report and reads back its size, its texts and its lines.
func svgOf(t *testing.T, r whatif.Report) (width, height float64, texts []svgText, lines []map[string]string) {
	t.Helper()
	var buf bytes.Buffer
	if err := r.WriteSVG(&buf); err != nil {
		t.Fatal(err)
	}
	dec := xml.NewDecoder(&buf)
	var cur *svgText
	for {
		tok, err := dec.Token()
		if err != nil {
			break
		}
		switch e := tok.(type) {
		case xml.StartElement:
			attr := map[string]string{}
			for _, a := range e.Attr {
				attr[a.Name.Local] = a.Value
			}
			num := func(k string) float64 { v, _ := strconv.ParseFloat(attr[k], 64); return v }
			switch e.Name.Local {
			case "svg":
				width, height = num("width"), num("height")
			case "text":
				cur = &svgText{X: num("x"), Y: num("y"), Anchor: attr["text-anchor"], Transform: attr["transform"], Class: attr["class"]}
			case "line":
				lines = append(lines, attr)
			}
		case xml.CharData:
			if cur != nil {
				cur.Text += string(e)
			}
		case xml.EndElement:
			if e.Name.Local == "text" && cur != nil {
				texts = append(texts, *cur)
				cur = nil
			}
		}
	}
	if width == 0 || height == 0 {
		t.Fatalf("the SVG has no size:\n%s", buf.String())
	}
	return width, height, texts, lines
}

// Every label of the plot lies inside it: the policy that saves the most
// tokens sits at the right edge, and its name was drawn past it and cut
// off. The widths are estimated at 0.6 em a character, more than a
// sans-serif font's average.
func TestTheWhatifPlotKeepsEveryLabelInside(t *testing.T) {
	r := whatif.Report{Runs: 4, Candidates: []whatif.Summary{
		{Candidate: whatif.Candidate{Name: whatif.Recorded}},
		{Candidate: whatif.Candidate{Name: "patient-observation-five"}, FalseStops: 1, Saved: whatif.Saved{InputTokens: 800}},
		{Candidate: whatif.Candidate{Name: "strict-repair-budget-one"}, FalseStops: 3, Saved: whatif.Saved{InputTokens: 12000, OutputTokens: 345}},
	}}
	width, height, texts, _ := svgOf(t, r)
	const em = 12.0
	labels := 0
	for _, tx := range texts {
		if tx.Transform != "" {
			continue // the rotated axis title
		}
		w := float64(len([]rune(tx.Text))) * 0.6 * em
		left, right := tx.X, tx.X+w
		switch tx.Anchor {
		case "end":
			left, right = tx.X-w, tx.X
		case "middle":
			left, right = tx.X-w/2, tx.X+w/2
		}
		if left < 0 || right > width || tx.Y-em < 0 || tx.Y > height {
			t.Errorf("%q at (%.0f, %.0f), anchor %q, spans x %.0f..%.0f: outside the %.0f×%.0f plot", tx.Text, tx.X, tx.Y, tx.Anchor, left, right, width, height)
		}
		if strings.Contains(tx.Text, "repair-budget") || strings.Contains(tx.Text, "observation") {
			labels++
		}
	}
	if labels != 2 {
		t.Fatalf("%d policy labels drawn, want 2", labels)
	}
}

// Both axes carry ticks with their values, from 0 up to at least the
// largest value shown, so a point can be read off the plot.
func TestTheWhatifPlotHasAxisTicks(t *testing.T) {
	r := whatif.Report{Runs: 4, Candidates: []whatif.Summary{
		{Candidate: whatif.Candidate{Name: whatif.Recorded}},
		{Candidate: whatif.Candidate{Name: "strict"}, FalseStops: 3, Saved: whatif.Saved{InputTokens: 12000, OutputTokens: 345}},
	}}
	_, _, texts, lines := svgOf(t, r)
	ticks := map[string][]float64{}
	for _, tx := range texts {
		if axis, ok := strings.CutPrefix(tx.Class, "tick-"); ok {
			v, err := strconv.ParseFloat(strings.ReplaceAll(tx.Text, ",", ""), 64)
			if err != nil {
				t.Fatalf("tick label %q is no number", tx.Text)
			}
			ticks[axis] = append(ticks[axis], v)
		}
	}
	marks := map[string]int{}
	for _, l := range lines {
		if axis, ok := strings.CutPrefix(l["class"], "tick-"); ok {
			marks[axis]++
		}
	}
	for axis, top := range map[string]float64{"x": 12345, "y": 3} {
		vs := ticks[axis]
		if len(vs) < 3 || vs[0] != 0 || vs[len(vs)-1] < top {
			t.Errorf("%s axis ticks %v: want at least 3, from 0 to at least %.0f", axis, vs, top)
		}
		for i := 1; i < len(vs); i++ {
			if vs[i] <= vs[i-1] {
				t.Errorf("%s axis ticks %v do not rise", axis, vs)
			}
		}
		if marks[axis] != len(vs) {
			t.Errorf("%s axis: %d tick marks for %d labels", axis, marks[axis], len(vs))
		}
	}
}
