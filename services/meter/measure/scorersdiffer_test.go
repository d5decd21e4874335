package measure

import (
	"strings"
	"testing"

	"github.com/factline/factline/cases"
	"github.com/factline/factline/events"
	"github.com/factline/factline/suites"
)

// Attempts graded under other scorers are other agents' results: their
// requested identities (suites.AgentIdentity) differ in the scorers
// component alone, and the report's comparison names it as what differs.
func TestAttemptsGradedUnderOtherScorersNameScorersAmongWhatDiffers(t *testing.T) {
	identity := func(scale []float64) (events.Digest, []events.Component) {
		c := &cases.Case{ID: "c1", Tools: []string{"read_file"}, Grading: &cases.Grading{
			Instruments: []cases.Instrument{{ID: "rate", Kind: cases.InstrumentJudge}},
			Scorers:     []cases.Scorer{{ID: "quality", Instrument: "rate", Key: "score", Scale: scale}}}}
		tr := &cases.Treatment{ID: "A", Model: cases.ModelSpec{Provider: cases.ProviderOpenAI, Name: "m"}}
		id, comps, err := suites.AgentIdentity(c, tr)
		if err != nil {
			t.Fatal(err)
		}
		return id, comps
	}
	idA, a := identity([]float64{1, 5})
	idB, b := identity([]float64{0, 10})
	if idA == idB {
		t.Fatal("cases scored on other scales have one identity")
	}
	if d := DiffComponents(a, b); strings.Join(d, ",") != suites.ComponentScorers {
		t.Fatalf("DiffComponents %v, want only %q", d, suites.ComponentScorers)
	}
	l := newSuite(t, submitted([]string{"c1", "c2"}, []string{"A", "B"}, 1))
	l.comps["A"], l.comps["B"] = a, b
	for _, c := range []string{"c1", "c2"} {
		l.attempt(c, "A", 1, events.RunDone, u64(10), pass)
		l.attempt(c, "B", 1, events.RunDone, u64(10), fail)
	}
	cmp := l.report().Comparisons[0]
	if cmp.Label != LabelAblation || strings.Join(cmp.Differences, ",") != suites.ComponentScorers {
		t.Fatalf("label %q, differences %v: want an ablation of %q", cmp.Label, cmp.Differences, suites.ComponentScorers)
	}
}
