package cases

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/factline/factline/events"
)

// Treatment is what a case is run under: the model and its settings, and
// overrides of the case's context and stall policies. Treatments are what
// the meter compares.
type Treatment struct {
	ID    string    `yaml:"id" json:"id"`
	Model ModelSpec `yaml:"model" json:"model"`
	// Context, when set, replaces the case's context policy.
	Context *ContextPolicy `yaml:"context,omitempty" json:"context,omitempty"`
	// Stall overrides the case's stall thresholds field by field.
	Stall StallPolicy `yaml:"stall,omitempty" json:"stall"`
	// Environment is the container image for cases that name none.
	Environment *Environment `yaml:"environment,omitempty" json:"environment,omitempty"`
	// Cache is the response cache (absent: off).
	Cache *Cache `yaml:"cache,omitempty" json:"cache,omitempty"`
	// Agent, when set, runs an external agent in place of the runner's
	// own loop, its model calls passing through a recorded proxy
	// (agent.go, docs/agents.md).
	Agent *Agent `yaml:"agent,omitempty" json:"agent,omitempty"`
	// Scaffold changes the built-in agent: its system prompt, the tools
	// it offers and their descriptions (absent: the defaults, and the
	// identity a treatment had before scaffolds existed).
	Scaffold *Scaffold `yaml:"scaffold,omitempty" json:"scaffold,omitempty"`
	// Delegation, when it allows it, offers the built-in agent the
	// delegate tool (delegation.go, docs/tools.md#delegate). Absent: never.
	Delegation *Delegation `yaml:"delegation,omitempty" json:"delegation,omitempty"`
}

// ModelSpec says which model answers.
type ModelSpec struct {
	// Provider is one of Providers: "scripted", "openai" (Chat
	// Completions), "openai-responses" (OpenAI's Responses API) or
	// "anthropic" (Anthropic's Messages API). It is part of the model
	// identity component: the same model behind two APIs is two agents.
	Provider string `yaml:"provider" json:"provider"`
	// Scripts (scripted): a directory holding <case-id>.yaml per case,
	// relative to the treatment file. Resolved into ScriptFiles.
	Scripts string `yaml:"scripts,omitempty" json:"-"`
	// ScriptFiles (scripted) maps a case ID to its script's text; filled
	// when the treatment is loaded so that it travels with the treatment.
	ScriptFiles map[string]string `yaml:"-" json:"script_files,omitempty"`
	// Name is the model name sent to the provider (openai).
	Name string `yaml:"name,omitempty" json:"name,omitempty"`
	// BaseURL of an OpenAI-compatible endpoint (openai). The API key is
	// never part of a treatment: it comes from the environment.
	BaseURL string `yaml:"base_url,omitempty" json:"base_url,omitempty"`
	// Temperature, MaxOutputTokens and Seed are request settings.
	Temperature     *float64 `yaml:"temperature,omitempty" json:"temperature,omitempty"`
	MaxOutputTokens int      `yaml:"max_output_tokens,omitempty" json:"max_output_tokens,omitempty"`
	Seed            *int64   `yaml:"seed,omitempty" json:"seed,omitempty"`
	// TopP is nucleus sampling's probability mass, in (0, 1].
	TopP *float64 `yaml:"top_p,omitempty" json:"top_p,omitempty"`
	// ReasoningEffort asks a reasoning model to think less or more
	// (ReasoningEfforts). Empty: the provider's default, and not sent.
	ReasoningEffort string `yaml:"reasoning_effort,omitempty" json:"reasoning_effort,omitempty"`
	// InputPrice and OutputPrice are cost units per million tokens (openai);
	// 0 means unknown, and costs then stay unknown.
	InputPrice  uint64 `yaml:"input_price,omitempty" json:"input_price,omitempty"`
	OutputPrice uint64 `yaml:"output_price,omitempty" json:"output_price,omitempty"`
	// CacheReadPrice and CacheWritePrice (openai-responses, anthropic) are
	// cost units per million input tokens read from and written to the
	// provider's prompt cache. 0: a read costs InputPrice (an upper bound)
	// and the cost of a call that wrote to the cache is unknown.
	CacheReadPrice  uint64 `yaml:"cache_read_price,omitempty" json:"cache_read_price,omitempty"`
	CacheWritePrice uint64 `yaml:"cache_write_price,omitempty" json:"cache_write_price,omitempty"`
	// Limits bound the calls to this model at this endpoint across every
	// runner of the fleet (docs/models.md#fleet-wide-limits). Nil: none.
	Limits *ModelLimits `yaml:"limits,omitempty" json:"limits,omitempty"`
	// Timeout bounds each attempt of a call to a hosted model (sending the
	// request and reading the whole reply); 0: the provider's default
	// (docs/models.md#timeouts). A slow local model needs more.
	Timeout Duration `yaml:"timeout,omitempty" json:"timeout,omitempty"`
	// MaxReplyBytes bounds the body of one answer of a hosted model, in
	// bytes: a longer one fails the call as bad_response
	// (docs/models.md#large-replies). 0: the providers' default, 32 MiB.
	// Like Timeout it is no part of the agent's identity: it decides
	// whether an answer is taken, not what is asked or answered.
	MaxReplyBytes int64 `yaml:"max_reply_bytes,omitempty" json:"max_reply_bytes,omitempty"`
}

// The bounds of a model's MaxReplyBytes: below MinMaxReplyBytes no reply
// fits (a reply's JSON around its text is hundreds of bytes); above
// MaxMaxReplyBytes one call could take the runner's memory, which the
// bound is there to keep.
const (
	MinMaxReplyBytes = 1 << 10
	MaxMaxReplyBytes = 1 << 30
)

// MinModelTimeout is the shortest model timeout a spec may set: less
// cannot carry a reply of any size, and reads as a unit left out.
const MinModelTimeout = time.Second

// ModelLimits bound the calls to one model at one endpoint (provider,
// base_url and name) across the fleet: every treatment naming the same
// model shares them. A field left out is no limit of that kind.
type ModelLimits struct {
	// MaxConcurrent is the most calls in flight at once.
	MaxConcurrent *int `yaml:"max_concurrent,omitempty" json:"max_concurrent,omitempty"`
	// MaxRequestsPerMinute is the most calls started in any minute.
	MaxRequestsPerMinute *int `yaml:"max_requests_per_minute,omitempty" json:"max_requests_per_minute,omitempty"`
}

// check refuses limits that admit nothing or are not counts.
func (l *ModelLimits) check(field string) error {
	if l == nil {
		return nil
	}
	if l.MaxConcurrent == nil && l.MaxRequestsPerMinute == nil {
		return fieldErr(field, "set max_concurrent or max_requests_per_minute (or leave limits out)")
	}
	for _, f := range []struct {
		name string
		v    *int
	}{{"max_concurrent", l.MaxConcurrent}, {"max_requests_per_minute", l.MaxRequestsPerMinute}} {
		if f.v != nil && *f.v < 1 {
			return fieldErr(field+"."+f.name, "want a whole number of at least 1, got %d (leave it out for no limit)", *f.v)
		}
	}
	return nil
}

// ReasoningEfforts are the reasoning_effort values OpenAI-compatible
// providers document.
var ReasoningEfforts = []string{"none", "minimal", "low", "medium", "high", "xhigh", "max"}

// Model providers.
const (
	ProviderScripted = "scripted"
	// ProviderOpenAI is any OpenAI-compatible Chat Completions endpoint.
	ProviderOpenAI = "openai"
	// ProviderOpenAIResponses is OpenAI's Responses API.
	ProviderOpenAIResponses = "openai-responses"
	// ProviderAnthropic is Anthropic's Messages API.
	ProviderAnthropic = "anthropic"
)

// Providers are the model providers a treatment may name.
var Providers = []string{ProviderScripted, ProviderOpenAI, ProviderOpenAIResponses, ProviderAnthropic}

// AnthropicEfforts are the reasoning_effort values Anthropic's Messages
// API takes (its output_config.effort).
var AnthropicEfforts = []string{"low", "medium", "high", "xhigh", "max"}

// checkProvider refuses a provider no one serves, a hosted model without a
// name and settings the provider's API cannot carry: a request that could
// never be sent is a treatment error when it is loaded, not a run that
// errs at its first turn.
func (m ModelSpec) checkProvider(field string) error {
	switch m.Provider {
	case ProviderScripted:
		if m.Timeout != 0 {
			// Nothing would be cut: the setting would be dropped in silence.
			return fieldErr(field+".timeout", "a scripted model is not called over a network; timeout applies to a hosted provider")
		}
		if m.MaxReplyBytes != 0 {
			return fieldErr(field+".max_reply_bytes", "a scripted model sends no reply body; max_reply_bytes applies to a hosted provider")
		}
		return nil
	case ProviderOpenAI, ProviderOpenAIResponses, ProviderAnthropic:
		if m.Name == "" {
			return fieldErr(field+".name", "required for provider %q", m.Provider)
		}
		if err := checkBaseURL(field+".base_url", m.BaseURL); err != nil {
			return err
		}
	case "":
		return fieldErr(field+".provider", "required (one of %q)", Providers)
	default:
		return fieldErr(field+".provider", "unknown provider %q (want one of %q)", m.Provider, Providers)
	}
	refuse := func(name string, set bool) error {
		if set {
			return fieldErr(field+"."+name, "provider %q takes no %s", m.Provider, name)
		}
		return nil
	}
	switch m.Provider {
	case ProviderAnthropic:
		for _, e := range []error{refuse("temperature", m.Temperature != nil), refuse("top_p", m.TopP != nil), refuse("seed", m.Seed != nil)} {
			if e != nil {
				return e
			}
		}
		if e := m.ReasoningEffort; e != "" && !slices.Contains(AnthropicEfforts, e) {
			return fieldErr(field+".reasoning_effort", "provider %q takes one of %v, not %q", m.Provider, AnthropicEfforts, e)
		}
	case ProviderOpenAIResponses:
		return refuse("seed", m.Seed != nil)
	}
	return nil
}

// checkBaseURL refuses a base_url the providers would refuse at the first
// call (models/openai.New and its siblings): the same rules, here so that
// the mistake is the file's, named when the suite loads.
func checkBaseURL(field, raw string) error {
	if raw == "" {
		return nil // the environment's, or the provider's default
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") {
		shown := fmt.Sprintf("%q", raw)
		if strings.Contains(raw, "@") {
			shown = "the URL" // it may hold a password
		}
		return fieldErr(field, "%s: want an http:// or https:// URL of the API root, such as http://127.0.0.1:8000/v1", shown)
	}
	if u.Host == "" {
		return fieldErr(field, "%q has no host", raw)
	}
	if u.User != nil {
		// Not echoed: the credentials are what must not be stored.
		return fieldErr(field, "carries credentials (user@): the key comes from the environment (docs/models.md)")
	}
	return nil
}

// ParseTreatment parses treatment YAML; name is used in errors.
func ParseTreatment(name string, data []byte) (*Treatment, error) {
	var t Treatment
	if err := DecodeYAML(name, data, &t); err != nil {
		return nil, err
	}
	if err := t.normalise(); err != nil {
		var ce *Error
		if errors.As(err, &ce) {
			ce.File = name
			if ce.Line == 0 {
				ce.Line = fieldLine(data, ce.Field)
			}
		}
		return nil, err
	}
	return &t, nil
}

func (t *Treatment) normalise() error {
	if err := events.ValidateToken("id", t.ID); err != nil {
		return tokenErr("id", err)
	}
	if err := t.Model.checkProvider("model"); err != nil {
		return err
	}
	if t.Model.Provider == ProviderScripted && t.Model.Scripts == "" && len(t.Model.ScriptFiles) == 0 {
		return fieldErr("model.scripts", "a scripted model needs a scripts directory")
	}
	if err := t.Model.checkSettings("model"); err != nil {
		return err
	}
	if t.Context != nil {
		if err := t.Context.normalise("context"); err != nil {
			return err
		}
	}
	if err := t.Environment.normalise("environment"); err != nil {
		return err
	}
	if err := t.Cache.check("cache"); err != nil {
		return err
	}
	if err := t.Agent.check("agent"); err != nil {
		return err
	}
	if t.Agent != nil && t.Scaffold != nil {
		// An external agent brings its own prompt and tools: a scaffold
		// would change nothing it does, and must not claim to.
		return fieldErr("scaffold", "a scaffold shapes the built-in loop; a treatment with an agent runs the agent's own")
	}
	if err := t.Scaffold.check("scaffold", t.ID); err != nil {
		return err
	}
	if t.Agent != nil && t.Delegation != nil && t.Delegation.Allowed {
		// An external agent calls its own tools, never the runner's.
		return fieldErr("delegation", "delegation is a tool of the built-in loop; a treatment with an agent cannot offer it")
	}
	return t.Stall.check("stall")
}

// checkSettings refuses request settings no provider accepts.
func (m ModelSpec) checkSettings(field string) error {
	if m.MaxOutputTokens < 0 {
		// A provider sends only a positive maximum: this one would be
		// dropped without a word.
		return fieldErr(field+".max_output_tokens", "want a whole number of at least 1 (leave it out for none), got %d", m.MaxOutputTokens)
	}
	if p := m.TopP; p != nil && !(*p > 0 && *p <= 1) {
		return fieldErr(field+".top_p", "want a probability mass above 0 and at most 1, got %v", *p)
	}
	if e := m.ReasoningEffort; e != "" && !slices.Contains(ReasoningEfforts, e) {
		return fieldErr(field+".reasoning_effort", "unknown effort %q (want one of %v)", e, ReasoningEfforts)
	}
	if m.Timeout != 0 && m.Timeout.Std() < MinModelTimeout {
		return fieldErr(field+".timeout", "want a duration of at least %s (leave it out for the provider's default), got %s", MinModelTimeout, m.Timeout.Std())
	}
	switch n := m.MaxReplyBytes; {
	case n == 0:
	case n < MinMaxReplyBytes:
		return fieldErr(field+".max_reply_bytes", "want a number of bytes of at least %d (leave it out for the default, 32 MiB), got %d", MinMaxReplyBytes, n)
	case n > MaxMaxReplyBytes:
		return fieldErr(field+".max_reply_bytes", "want a number of bytes of at most %d (1 GiB: the runner holds a reply in memory), got %d", MaxMaxReplyBytes, n)
	}
	return m.Limits.check(field + ".limits")
}

// Encode returns the canonical JSON stored as the treatment blob.
func (t *Treatment) Encode() ([]byte, error) { return json.Marshal(t) }

// DecodeTreatment reads a treatment from its stored JSON.
func DecodeTreatment(data []byte) (*Treatment, error) {
	var t Treatment
	if err := json.NewDecoder(bytes.NewReader(data)).Decode(&t); err != nil {
		return nil, fmt.Errorf("stored treatment: %w", err)
	}
	if err := t.normalise(); err != nil {
		return nil, fmt.Errorf("stored treatment: %w", err)
	}
	return &t, nil
}

// Effective is a case under a treatment: the policies that apply.
type Effective struct {
	Case      *Case
	Treatment *Treatment
	Context   ContextPolicy
	Stall     StallLimits
	// Environment is the case's, else the treatment's; nil: commands run
	// as contained host processes.
	Environment *Environment
}

// Apply combines a case and a treatment.
func Apply(c *Case, t *Treatment) Effective {
	ctx := c.Context
	if t != nil && t.Context != nil {
		ctx = *t.Context
	}
	stall := c.Stall
	if t != nil {
		stall = stall.Over(t.Stall)
	}
	env := c.Environment
	if env == nil && t != nil {
		env = t.Environment
	}
	return Effective{Case: c, Treatment: t, Context: ctx, Stall: stall.Resolve(DefaultStall), Environment: env}
}
