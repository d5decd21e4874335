package suites

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

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
	// ComponentHarness is the harness: the build (version.HarnessOf: module
	// version, VCS revision, dirty flag). The runner's run.claimed replaces
	// it with its own build and the digest of what shapes its behaviour
	// (tool contracts, policies, containment applied).
	ComponentHarness = "harness"
	// ComponentCapabilities is the capability manifest: the tools offered
	// (the case's, narrowed by the treatment's scaffold tools).
	ComponentCapabilities = "capabilities"
	// ComponentPrompt is the digest of the system prompt as rendered for
	// the case (only when it is not cases.DefaultSystemPrompt): two
	// treatments that differ only in their prompt are an ablation of it.
	ComponentPrompt = "prompt"
	// ComponentToolDescriptions is the treatment's tool description
	// overrides that apply to the case's offered tools, as a JSON object
	// of tool name to the digest of its description (only when there is
	// one).
	ComponentToolDescriptions = "tool_descriptions"
	// ComponentExtensions is the extensions the case names (only when it
	// names any); the runner's run.claimed replaces it with what it
	// admitted: source, server version and capabilities.
	ComponentExtensions = "extensions"
	// ComponentContext is the effective context policy.
	ComponentContext = "context"
	// ComponentStall is the effective stall policy (thresholds, repair
	// budget, escalation target), in the form StallComponentVersion says.
	ComponentStall = "stall"
	// ComponentEnvironment is the container environment commands run in
	// (only when the case or its treatment names one): the image by
	// digest, never its tag, and the limits.
	ComponentEnvironment = "environment"
	// ComponentCache is the treatment's response cache mode (only when it
	// reads the cache): replies served from an earlier run's calls make
	// another agent than one whose every call reaches the model.
	ComponentCache = "cache"
	// ComponentScorers is the case's scorer set (only when it declares
	// scorers): each scorer's id, instrument, key, scale, direction and
	// whether (and where) it decides, sorted by id. It shapes no
	// behaviour of the agent but is part of the grader's identity: numbers
	// read under other scorers measure something else, and a comparison
	// across them must name it.
	ComponentScorers = "scorers"
	// ComponentAgent is the external agent a treatment runs in place of
	// the runner's loop (only when it names one): its command, environment
	// templates, stdin template and wire (AgentComponent). The runner's
	// run.claimed adds the version the agent's own version command printed
	// on that runner, so that two installations of different versions are
	// two agents.
	ComponentAgent = "agent"
	// ComponentDelegation says the treatment allows delegation (only
	// when it does: the value is "allowed"): an agent that may hand part
	// of its task to child runs is another agent than one that may not.
	ComponentDelegation = "delegation"
)

// AgentComponent is the value of the agent component of a, with the
// version its version command printed ("" when not asked or none).
func AgentComponent(a *cases.Agent, version string) (string, error) {
	b, err := json.Marshal(struct {
		Command []string          `json:"command"`
		Env     map[string]string `json:"env,omitempty"`
		Stdin   string            `json:"stdin,omitempty"`
		Wire    string            `json:"wire"`
		Version string            `json:"version,omitempty"`
	}{a.Command, a.Env, a.Stdin, a.WireOf(), version})
	if err != nil {
		return "", fmt.Errorf("agent component: %w", err)
	}
	return string(b), nil
}

// StallComponentVersion is the form of the stall component's value: 2 is
// snake_case keys as every other value has, with "version": 2 first.
// Version 1 (no version key) wrote Go's field names ("RepeatedFailure":2);
// the meter compares the two forms by their thresholds
// (measure.DiffComponents), so facts written before still compare right.
// The change is the only one version 2 makes to an identity.
const StallComponentVersion = 2

// stallComponent is the stall component's value at StallComponentVersion.
type stallComponent struct {
	Version              int    `json:"version"`
	RepeatedFailure      int    `json:"repeated_failure"`
	RepeatedObservation  int    `json:"repeated_observation"`
	RepeatedError        int    `json:"repeated_error"`
	IdleTurns            int    `json:"idle_turns"`
	Alternation          int    `json:"alternation"`
	FailingVerifications int    `json:"failing_verifications"`
	RepairBudget         int    `json:"repair_budget"`
	EscalateTo           string `json:"escalate_to,omitempty"`
}

func stallComponentOf(l cases.StallLimits) stallComponent {
	return stallComponent{Version: StallComponentVersion, RepeatedFailure: l.RepeatedFailure,
		RepeatedObservation: l.RepeatedObservation, RepeatedError: l.RepeatedError, IdleTurns: l.IdleTurns,
		Alternation: l.Alternation, FailingVerifications: l.FailingVerifications, RepairBudget: l.RepairBudget,
		EscalateTo: l.EscalateTo}
}

// scorerComponent is one scorer in the scorers component's value: what
// it reads and how, with every default spelled out, so that a scorer
// written with its defaults and one written without are the same.
type scorerComponent struct {
	ID             string    `json:"id"`
	Instrument     string    `json:"instrument"`
	Key            string    `json:"key,omitempty"`
	Scale          []float64 `json:"scale,omitempty"`
	HigherIsBetter bool      `json:"higher_is_better"`
	Decides        bool      `json:"decides,omitempty"`
	PassAt         *float64  `json:"pass_at,omitempty"`
}

// scorersComponentOf returns the scorers component's value: the scorers
// sorted by id, since the order they are declared in is not what they are.
func scorersComponentOf(ss []cases.Scorer) []scorerComponent {
	out := make([]scorerComponent, 0, len(ss))
	for _, s := range ss {
		out = append(out, scorerComponent{ID: s.ID, Instrument: s.Instrument, Key: s.Key,
			Scale: slices.Clone(s.Scale), HigherIsBetter: s.Higher(), Decides: s.Decides, PassAt: s.PassAt})
	}
	slices.SortFunc(out, func(a, b scorerComponent) int { return strings.Compare(a.ID, b.ID) })
	return out
}

// AgentIdentity returns the agent identity of a case run under a treatment
// (seed 001, section 1: model contract, harness version, capability
// manifest and policy): its components, sorted by name, and the digest of
// their canonical JSON. Each value is compact canonical JSON, or a digest
// where the content is long (a script).
func AgentIdentity(c *cases.Case, t *cases.Treatment) (events.Digest, []events.Component, error) {
	eff := cases.Apply(c, t)
	model := t.Model
	model.Scripts, model.ScriptFiles = "", nil
	// Limits decide when a call is sent, never what is sent or answered:
	// the same model under other limits is the same agent.
	model.Limits = nil
	// So does the timeout: it decides how long an answer is waited for.
	model.Timeout = 0
	// And the bound on a reply's body: whether an answer is taken, not
	// what it says.
	model.MaxReplyBytes = 0
	type contract struct {
		cases.ModelSpec
		Script events.Digest `json:"script,omitempty"`
	}
	mc := contract{ModelSpec: model}
	if t.Model.Provider == cases.ProviderScripted {
		mc.Script = events.DigestOf([]byte(t.Model.ScriptFiles[c.ID]))
	}
	tools := cases.OfferedTools(c, t)
	slices.Sort(tools)
	prompt, err := cases.SystemPrompt(c, t)
	if err != nil {
		return "", nil, fmt.Errorf("identity of %s under %s: %w", c.ID, t.ID, err)
	}
	harness, err := version.HarnessOf(version.Current(), nil)
	if err != nil {
		return "", nil, fmt.Errorf("identity of %s under %s: %w", c.ID, t.ID, err)
	}
	parts := []struct {
		name string
		v    any
	}{
		{ComponentCapabilities, tools},
		{ComponentContext, eff.Context},
		{ComponentHarness, harness},
		{ComponentModel, mc},
		{ComponentStall, stallComponentOf(eff.Stall)},
	}
	if len(c.Extensions) > 0 {
		// Only then, so that the identity of a case without extensions
		// stays what it was.
		names := slices.Clone(c.Extensions)
		slices.Sort(names)
		parts = append(parts, struct {
			name string
			v    any
		}{ComponentExtensions, names})
	}
	if t.CacheReads() {
		// Only then, like extensions: a treatment with the cache off keeps
		// the identity it had before caches existed.
		parts = append(parts, struct {
			name string
			v    any
		}{ComponentCache, t.CacheMode()})
	}
	if env := eff.Environment; env != nil {
		// Only then, like extensions. The digest names the image; a tag
		// moved to another image must change the identity, and the same
		// image under another tag must not.
		pinned := *env
		if pinned.ImageDigest != "" {
			pinned.Image = ""
		}
		parts = append(parts, struct {
			name string
			v    any
		}{ComponentEnvironment, pinned})
	}
	if t.Agent != nil {
		// Only then: a treatment of the runner's own loop keeps its
		// identity.
		v, err := AgentComponent(t.Agent, "")
		if err != nil {
			return "", nil, fmt.Errorf("identity of %s under %s: %w", c.ID, t.ID, err)
		}
		parts = append(parts, struct {
			name string
			v    any
		}{ComponentAgent, v})
	}
	if cases.DelegationAllowed(c, t) {
		// Only then, like extensions: a treatment that does not delegate
		// keeps the identity it had before delegation existed.
		parts = append(parts, struct {
			name string
			v    any
		}{ComponentDelegation, "allowed"})
	}
	if prompt != cases.DefaultSystemPrompt {
		// Only then, like extensions: a treatment that sets no prompt
		// keeps the identity it had before prompts could be set, and one
		// that sets today's default is the same agent. A digest: the text
		// may be long, and it travels in the treatment.
		parts = append(parts, struct {
			name string
			v    any
		}{ComponentPrompt, string(events.DigestOf([]byte(prompt)))})
	}
	if descs := cases.ToolDescriptions(c, t); len(descs) > 0 {
		digests := make(map[string]events.Digest, len(descs))
		for name, d := range descs {
			digests[name] = events.DigestOf([]byte(d))
		}
		parts = append(parts, struct {
			name string
			v    any
		}{ComponentToolDescriptions, digests})
	}
	if c.Grading != nil && len(c.Grading.Scorers) > 0 {
		// Only then, like extensions: a case without scorers keeps the
		// identity it had before scores existed.
		parts = append(parts, struct {
			name string
			v    any
		}{ComponentScorers, scorersComponentOf(c.Grading.Scorers)})
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
	id, comps, err := IdentityOf(comps)
	if err != nil {
		return "", nil, fmt.Errorf("identity of %s under %s: %w", c.ID, t.ID, err)
	}
	return id, comps, nil
}

// IdentityOf sorts identity components by name and returns the digest of
// their canonical JSON: the one identity scheme, used by the meter for
// requests and by the runner for what it admitted.
func IdentityOf(comps []events.Component) (events.Digest, []events.Component, error) {
	comps = slices.Clone(comps)
	slices.SortFunc(comps, func(a, b events.Component) int { return strings.Compare(a.Name, b.Name) })
	b, err := json.Marshal(comps)
	if err != nil {
		return "", nil, err
	}
	return events.DigestOf(b), comps, nil
}

// WithComponent returns the identity of comps with the component name set
// to value (added when absent, replaced when present).
func WithComponent(comps []events.Component, name, value string) (events.Digest, []events.Component, error) {
	out := make([]events.Component, 0, len(comps)+1)
	for _, c := range comps {
		if c.Name != name {
			out = append(out, c)
		}
	}
	return IdentityOf(append(out, events.Component{Name: name, Value: value}))
}

// Budget returns the run budget of a case, as run.requested carries it.
func Budget(c *cases.Case) events.Budget {
	return events.Budget{Steps: c.Budget.Steps, Tokens: c.Budget.InputTokens + c.Budget.OutputTokens,
		Seconds: uint32(c.Budget.Wall.Std().Seconds()), Cost: c.Budget.Cost}
}
