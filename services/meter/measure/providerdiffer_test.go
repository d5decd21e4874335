package measure

import (
	"strings"
	"testing"

	"github.com/factline/factline/cases"
	"github.com/factline/factline/events"
	"github.com/factline/factline/suites"
)

// The same model behind two APIs is two agents: treatments that differ only
// in the provider (Chat Completions, the Responses API, Anthropic
// Messages) have identities that differ in the model component alone, and
// the report's comparison of them is an ablation of the model.
func TestTreatmentsDifferingOnlyInTheirAPINameTheModelAmongWhatDiffers(t *testing.T) {
	identity := func(provider string) (events.Digest, []events.Component) {
		c := &cases.Case{ID: "c1", Tools: []string{"read_file"}}
		tr := &cases.Treatment{ID: "A", Model: cases.ModelSpec{Provider: provider, Name: "m", BaseURL: "http://127.0.0.1:1/v1"}}
		id, comps, err := suites.AgentIdentity(c, tr)
		if err != nil {
			t.Fatal(err)
		}
		return id, comps
	}
	ids := map[events.Digest]string{}
	comps := map[string][]events.Component{}
	for _, p := range []string{cases.ProviderOpenAI, cases.ProviderOpenAIResponses, cases.ProviderAnthropic} {
		id, c := identity(p)
		if other, ok := ids[id]; ok {
			t.Fatalf("providers %s and %s have one identity", other, p)
		}
		ids[id], comps[p] = p, c
	}
	for _, p := range []string{cases.ProviderOpenAIResponses, cases.ProviderAnthropic} {
		if d := DiffComponents(comps[cases.ProviderOpenAI], comps[p]); strings.Join(d, ",") != suites.ComponentModel {
			t.Fatalf("openai against %s: DiffComponents %v, want only %q", p, d, suites.ComponentModel)
		}
	}
	l := newSuite(t, submitted([]string{"c1", "c2"}, []string{"A", "B"}, 1))
	l.comps["A"], l.comps["B"] = comps[cases.ProviderOpenAI], comps[cases.ProviderAnthropic]
	for _, c := range []string{"c1", "c2"} {
		l.attempt(c, "A", 1, events.RunDone, u64(10), pass)
		l.attempt(c, "B", 1, events.RunDone, u64(10), fail)
	}
	cmp := l.report().Comparisons[0]
	if cmp.Label != LabelAblation || strings.Join(cmp.Differences, ",") != suites.ComponentModel {
		t.Fatalf("label %q, differences %v: want an ablation of %q", cmp.Label, cmp.Differences, suites.ComponentModel)
	}
}
