package runner

import (
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/factline/factline/cases"
	"github.com/factline/factline/events"
	"github.com/factline/factline/suites"
	"github.com/factline/factline/version"
)

// claimIdentity records in the claim the agent identity of what this
// runner actually runs: the requested components, with the extensions
// component replaced by the extensions it admitted and the harness
// component by its own build and the digest of what shapes its behaviour
// (the tool contracts it offers, extensions' included; the effective
// context and stall policy; the case's stop policy, its checks and
// requirements; the system prompt, when not the default; its permission
// policy, the tools' approval rules in their contracts and the endpoints
// http_call may reach; the containment it applied; and its response
// cache, unless off). Two runners that would behave differently never
// record the same identity, whatever the request said.
func (a *attempt) claimIdentity(claim *events.RunClaimed) error {
	contracts, err := a.registry.Contracts()
	if err != nil {
		return err
	}
	stop := struct {
		Checks        any   `json:"checks"`
		Requirements  any   `json:"requirements"`
		RequiresWrite *bool `json:"requires_write,omitempty"`
	}{a.kase.Checks, a.kase.Requirements, a.kase.RequiresWrite}
	behaviour := map[string]json.RawMessage{"tools": contracts}
	for name, v := range map[string]any{"context": a.eff.Context, "stall": a.eff.Stall, "stop": stop,
		"http": a.kase.HTTP, "containment": applied(claim.Containment)} {
		data, err := json.Marshal(v)
		if err != nil {
			return fmt.Errorf("identity: %s: %w", name, err)
		}
		behaviour[name] = data
	}
	if a.system != cases.DefaultSystemPrompt {
		// What the model is told first shapes all it does. Only when it is
		// not the default, so that identities recorded before prompts
		// could be set stay what they were.
		behaviour["prompt"] = json.RawMessage(strconv.Quote(string(events.DigestOf([]byte(a.system)))))
	}
	if mode := a.eff.Treatment.CacheMode(); mode != cases.CacheOff {
		// A reply served from the cache is not a fresh sample of the
		// model: an attempt that may be served one is another agent than
		// one that may not. Off adds nothing, so that identities recorded
		// before caches existed stay what they were.
		behaviour["cache"] = json.RawMessage(strconv.Quote(mode))
	}
	harness, err := version.HarnessOf(version.Current(), behaviour)
	if err != nil {
		return err
	}
	comps := a.requested.Components
	if len(claim.Extensions) > 0 {
		value, err := json.Marshal(claim.Extensions)
		if err != nil {
			return fmt.Errorf("identity: extensions: %w", err)
		}
		if _, comps, err = suites.WithComponent(comps, suites.ComponentExtensions, string(value)); err != nil {
			return err
		}
	}
	if ag := a.eff.Treatment.Agent; ag != nil {
		// The agent as installed on this runner: its own version output.
		value, err := suites.AgentComponent(ag, a.agentVersion)
		if err != nil {
			return err
		}
		if _, comps, err = suites.WithComponent(comps, suites.ComponentAgent, value); err != nil {
			return err
		}
	}
	claim.Identity, _, err = suites.WithComponent(comps, suites.ComponentHarness, harness)
	return err
}

// applied is what of a containment record shapes behaviour: the provider
// and each feature's state and limit. A feature's detail is left out: it
// explains the state in words that may name this host's paths (a work
// directory), which would make every runner its own agent.
func applied(c *events.Containment) any {
	if c == nil {
		return nil
	}
	type feature struct {
		Name  string `json:"name"`
		State string `json:"state"`
		Limit uint64 `json:"limit,omitempty"`
	}
	out := struct {
		Provider string    `json:"provider"`
		Features []feature `json:"features"`
	}{Provider: c.Provider}
	for _, f := range c.Features {
		out.Features = append(out.Features, feature{Name: f.Name, State: string(f.State), Limit: f.Limit})
	}
	return out
}

// requestedPrompt checks that the system prompt this runner rendered is the
// one the run's request names: the digest of its prompt component, or the
// default when it has none. A request recorded without an identity (by a
// submitter older than identities) names nothing to check.
func requestedPrompt(comps []events.Component, system string) error {
	if len(comps) == 0 {
		return nil
	}
	want := ""
	for _, c := range comps {
		if c.Name == suites.ComponentPrompt {
			want = c.Value
		}
	}
	got := ""
	if system != cases.DefaultSystemPrompt {
		got = string(events.DigestOf([]byte(system)))
	}
	if got != want {
		name := func(d string) string {
			if d == "" {
				return "the default prompt"
			}
			return "prompt " + d
		}
		return fmt.Errorf("the system prompt rendered here is %s, the request names %s", name(got), name(want))
	}
	return nil
}
