// Package hosted builds the model a treatment's (or a judge's) model spec
// names when it is a hosted API: OpenAI-compatible Chat Completions
// (openai), OpenAI's Responses API (openai-responses) or Anthropic's
// Messages API (anthropic), with the key from the environment. The runner
// and the grader build their models here, so that both reach a provider
// the same way.
package hosted

import (
	"fmt"

	"github.com/factline/factline/cases"
	"github.com/factline/factline/models"
	"github.com/factline/factline/models/anthropic"
	"github.com/factline/factline/models/openai"
	"github.com/factline/factline/models/responses"
)

// Is reports whether provider is a hosted API this package builds.
func Is(provider string) bool {
	switch provider {
	case cases.ProviderOpenAI, cases.ProviderOpenAIResponses, cases.ProviderAnthropic:
		return true
	}
	return false
}

// New returns the model m names, configured from m and the environment
// (each provider's FromEnv). A spec of another provider is an error.
func New(m cases.ModelSpec) (models.Model, error) {
	switch m.Provider {
	case cases.ProviderOpenAI:
		cfg, err := openai.Config{BaseURL: m.BaseURL, Model: m.Name, InputPrice: m.InputPrice, OutputPrice: m.OutputPrice, Timeout: m.Timeout.Std(), MaxReplyBytes: m.MaxReplyBytes}.FromEnv()
		if err != nil {
			return nil, err
		}
		return model(openai.New(cfg))
	case cases.ProviderOpenAIResponses:
		cfg, err := responses.Config{BaseURL: m.BaseURL, Model: m.Name, InputPrice: m.InputPrice, OutputPrice: m.OutputPrice,
			CacheReadPrice: m.CacheReadPrice, CacheWritePrice: m.CacheWritePrice, Timeout: m.Timeout.Std(), MaxReplyBytes: m.MaxReplyBytes}.FromEnv()
		if err != nil {
			return nil, err
		}
		return model(responses.New(cfg))
	case cases.ProviderAnthropic:
		cfg, err := anthropic.Config{BaseURL: m.BaseURL, Model: m.Name, InputPrice: m.InputPrice, OutputPrice: m.OutputPrice,
			CacheReadPrice: m.CacheReadPrice, CacheWritePrice: m.CacheWritePrice, Timeout: m.Timeout.Std(), MaxReplyBytes: m.MaxReplyBytes}.FromEnv()
		if err != nil {
			return nil, err
		}
		return model(anthropic.New(cfg))
	}
	return nil, fmt.Errorf("provider %q is not a hosted API", m.Provider)
}

// Endpoint is the API root the model m names is reached at, as New
// resolves it ("" for a provider that is not hosted). The runner's
// response cache keys on it: replies of two endpoints are never taken for
// each other's.
func Endpoint(m cases.ModelSpec) string {
	switch m.Provider {
	case cases.ProviderOpenAI:
		return openai.Endpoint(m.BaseURL)
	case cases.ProviderOpenAIResponses:
		return responses.Endpoint(m.BaseURL)
	case cases.ProviderAnthropic:
		return anthropic.Endpoint(m.BaseURL)
	}
	return ""
}

// model returns m as a models.Model, or a nil interface (never a typed
// nil pointer) with err.
func model[M models.Model](m M, err error) (models.Model, error) {
	if err != nil {
		return nil, err
	}
	return m, nil
}
