package measure

import (
	"bytes"
	"strings"
	"testing"

	"github.com/factline/factline/events"
)

// A treatment whose attempts ran an external agent is reported as its own
// harness, naming the agent, and the table says what its evidence is; a
// built-in treatment is "built-in" and its lines are as before.
func TestAnExternalAgentIsReportedAsItsOwnHarness(t *testing.T) {
	runs := map[string]*Attempt{
		"a1": {Requested: &events.RunRequested{Components: []events.Component{{Name: "model", Value: "{}"}}}},
		"b1": {Requested: &events.RunRequested{Components: []events.Component{{Name: "model", Value: "{}"},
			{Name: componentAgent, Value: `{"command":["/opt/x/.bin/qwen","--yolo"],"wire":"openai-chat"}`}}}},
	}
	rows := []AttemptRow{{Run: "a1", Treatment: "builtin"}, {Run: "b1", Treatment: "qwen"}}
	if h := harnessOf("builtin", rows, runs); h != HarnessBuiltIn {
		t.Errorf("builtin: %q", h)
	}
	if h := harnessOf("qwen", rows, runs); h != "external (qwen)" {
		t.Errorf("qwen: %q", h)
	}
	var b bytes.Buffer
	r := Report{Suite: "s", Trials: 1, Treatments: []TreatmentReport{{Treatment: "builtin", Harness: HarnessBuiltIn}, {Treatment: "qwen", Harness: "external (qwen)"}}}
	if err := WriteTable(&b, r); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "qwen: an external (qwen) agent: its evidence is its recorded model calls") || strings.Contains(b.String(), "builtin: an") {
		t.Fatalf("table:\n%s", b.String())
	}
}
