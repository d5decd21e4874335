package suites

import (
	"path/filepath"
	"slices"
	"testing"

	"github.com/factline/factline/cases"
	"github.com/factline/factline/events"
	"github.com/factline/factline/internal/mapdiff"
)

// The scorer set is part of the grader's identity: two attempts whose
// cases score under other scorers (another scale, key, direction or
// deciding scorer) measured other things, and a comparison of them names
// "scorers" among what differs. A case without scorers has no such
// component and keeps the identity it had before scores existed.
func TestAScorerSetIsAComponentOfTheRequestedIdentity(t *testing.T) {
	dir := tree(t, suiteFiles(goodSuite))
	s, err := Load(filepath.Join(dir, "suite.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	c, tr := s.Cases[0], s.Treatments[0]
	if c.Grading == nil || len(c.Grading.Instruments) == 0 {
		t.Fatal("the good suite's first case has no instrument to score")
	}
	id, comps, err := AgentIdentity(c, tr)
	if err != nil {
		t.Fatal(err)
	}
	if slices.ContainsFunc(comps, func(x events.Component) bool { return x.Name == ComponentScorers }) {
		t.Fatalf("a case without scorers has a scorers component: %v", comps)
	}
	yes := true
	scored := func(mut func(*cases.Scorer)) *cases.Case {
		cc := *c
		g := *c.Grading
		sc := cases.Scorer{ID: "quality", Instrument: g.Instruments[0].ID, Key: "score",
			Scale: []float64{0, 1}, HigherIsBetter: &yes}
		if mut != nil {
			mut(&sc)
		}
		g.Scorers = []cases.Scorer{sc}
		cc.Grading = &g
		return &cc
	}
	baseID, base, err := AgentIdentity(scored(nil), tr)
	if err != nil {
		t.Fatal(err)
	}
	if baseID == id {
		t.Fatal("declaring a scorer kept the identity")
	}
	if d := diffNames(comps, base); !slices.Equal(d, []string{ComponentScorers}) {
		t.Fatalf("scorers added: differences %v, want only %q", d, ComponentScorers)
	}
	no := false
	at := 0.5
	for name, mut := range map[string]func(*cases.Scorer){
		"id":        func(s *cases.Scorer) { s.ID = "style" },
		"key":       func(s *cases.Scorer) { s.Key = "f1" },
		"scale":     func(s *cases.Scorer) { s.Scale = []float64{1, 5} },
		"direction": func(s *cases.Scorer) { s.HigherIsBetter = &no },
		"deciding":  func(s *cases.Scorer) { s.Decides, s.PassAt = true, &at },
	} {
		got, other, err := AgentIdentity(scored(mut), tr)
		if err != nil {
			t.Fatal(err)
		}
		if got == baseID {
			t.Errorf("another %s kept the identity", name)
		}
		if d := diffNames(base, other); !slices.Equal(d, []string{ComponentScorers}) {
			t.Errorf("another %s: differences %v, want only %q", name, d, ComponentScorers)
		}
	}
	// The order scorers are declared in is not what they are.
	two := scored(nil)
	second := cases.Scorer{ID: "cost", Instrument: two.Grading.Instruments[0].ID, Scale: []float64{0, 1}}
	ab := *two
	gab := *two.Grading
	gab.Scorers = []cases.Scorer{gab.Scorers[0], second}
	ab.Grading = &gab
	ba := *two
	gba := *two.Grading
	gba.Scorers = []cases.Scorer{second, gab.Scorers[0]}
	ba.Grading = &gba
	idAB, _, err := AgentIdentity(&ab, tr)
	if err != nil {
		t.Fatal(err)
	}
	idBA, _, err := AgentIdentity(&ba, tr)
	if err != nil {
		t.Fatal(err)
	}
	if idAB != idBA {
		t.Error("the same scorers declared in another order made another identity")
	}
}

// diffNames is the names of the components whose values differ, for tests.
func diffNames(a, b []events.Component) []string {
	va, vb := map[string]string{}, map[string]string{}
	for _, c := range a {
		va[c.Name] = c.Value
	}
	for _, c := range b {
		vb[c.Name] = c.Value
	}
	return mapdiff.Keys(va, vb)
}
