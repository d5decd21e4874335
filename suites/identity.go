package suites

import (
	"encoding/json"
	"fmt"
	"slices"

	"github.com/factline/factline/cases"
	"github.com/factline/factline/events"
	"github.com/factline/factline/version"
)

// Names of the components of an agent identity. Two attempts are the same
// agent only when every component is equal; a comparison of two treatments
// names the components that differ.
const (
	// ComponentModel is the model contract: provider, model name, endpoint,
	// request settings and prices, and for a scripted model the digest of
	// the script it plays on this case.
	ComponentModel = "model"
	// ComponentHarness is the harness version (package version).
	ComponentHarness = "harness"
	// ComponentCapabilities is the capability manifest: the tools offered.
	ComponentCapabilities = "capabilities"
	// ComponentContext is the effective context policy.
	ComponentContext = "context"
	// ComponentStall is the effective stall policy (thresholds, repair
	// budget, escalation target).
	ComponentStall = "stall"
)

// AgentIdentity returns the agent identity of a case run under a treatment
// (seed 001, section 1: model contract, harness version, capability
// manifest and policy): its components, sorted by name, and the digest of
// their canonical JSON. Each value is compact canonical JSON, or a digest
// where the content is long (a script).
func AgentIdentity(c *cases.Case, t *cases.Treatment) (events.Digest, []events.Component, error) {
	eff := cases.Apply(c, t)
	model := t.Model
	model.Scripts, model.ScriptFiles = "", nil
	type contract struct {
		cases.ModelSpec
		Script events.Digest `json:"script,omitempty"`
	}
	mc := contract{ModelSpec: model}
	if t.Model.Provider == cases.ProviderScripted {
		mc.Script = events.DigestOf([]byte(t.Model.ScriptFiles[c.ID]))
	}
	tools := slices.Clone(c.Tools)
	slices.Sort(tools)
	parts := []struct {
		name string
		v    any
	}{
		{ComponentCapabilities, tools},
		{ComponentContext, eff.Context},
		{ComponentHarness, version.Harness},
		{ComponentModel, mc},
		{ComponentStall, eff.Stall},
	}
	comps := make([]events.Component, 0, len(parts))
	for _, p := range parts {
		var v string
		if s, ok := p.v.(string); ok {
			v = s
		} else {
			b, err := json.Marshal(p.v)
			if err != nil {
				return "", nil, fmt.Errorf("identity of %s under %s: %s: %w", c.ID, t.ID, p.name, err)
			}
			v = string(b)
		}
		comps = append(comps, events.Component{Name: p.name, Value: v})
	}
	b, err := json.Marshal(comps)
	if err != nil {
		return "", nil, fmt.Errorf("identity of %s under %s: %w", c.ID, t.ID, err)
	}
	return events.DigestOf(b), comps, nil
}

// Budget returns the run budget of a case, as run.requested carries it.
func Budget(c *cases.Case) events.Budget {
	return events.Budget{Steps: c.Budget.Steps, Tokens: c.Budget.InputTokens + c.Budget.OutputTokens,
		Seconds: uint32(c.Budget.Wall.Std().Seconds()), Cost: c.Budget.Cost}
}
