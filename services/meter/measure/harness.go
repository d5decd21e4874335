package measure

import (
	"encoding/json"
	"path/filepath"
)

// Agent harness kinds a treatment's attempts ran under.
const (
	// HarnessBuiltIn is factline's own runner loop.
	HarnessBuiltIn = "built-in"
	// HarnessExternal is an external agent behind the recorded proxy
	// (docs/agents.md): its evidence is its model calls and its final
	// workspace, never dispatches under tool contracts.
	HarnessExternal = "external"
)

// componentAgent is suites.ComponentAgent (measure imports no suites).
const componentAgent = "agent"

// harnessOf says which agent harness the treatment's requested attempts
// ran under, from their identity's agent component: "built-in", "external
// (<command>)" naming the agent's executable, or "" when none was
// requested yet. A treatment whose attempts disagree (trials requested
// under different treatment files) says "mixed".
func harnessOf(treatment string, rows []AttemptRow, runs map[string]*Attempt) string {
	out := ""
	for _, r := range rows {
		if r.Treatment != treatment {
			continue
		}
		at := runs[r.Run]
		if at == nil || at.Requested == nil {
			continue
		}
		h := HarnessBuiltIn
		for _, c := range at.Requested.Components {
			if c.Name != componentAgent {
				continue
			}
			var v struct {
				Command []string `json:"command"`
			}
			h = HarnessExternal
			if json.Unmarshal([]byte(c.Value), &v) == nil && len(v.Command) > 0 {
				h += " (" + filepath.Base(v.Command[0]) + ")"
			}
		}
		switch {
		case out == "":
			out = h
		case out != h:
			return "mixed"
		}
	}
	return out
}
