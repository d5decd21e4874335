package runner

import (
	"testing"

	"github.com/factline/factline/cases"
	"github.com/factline/factline/events"
	"github.com/factline/factline/models"
)

// A reply of one API never answers a call to another: the same model at
// the same endpoint under another provider has another cache identity.
func TestTheProviderIsPartOfTheCacheIdentity(t *testing.T) {
	kase := &cases.Case{ID: "c", Instruction: "do it"}
	seen := map[events.Digest]string{}
	for _, p := range []string{cases.ProviderOpenAI, cases.ProviderOpenAIResponses, cases.ProviderAnthropic} {
		tr := &cases.Treatment{ID: "t", Model: cases.ModelSpec{Provider: p, Name: "m", BaseURL: "http://127.0.0.1:1/v1"},
			Cache: &cases.Cache{Mode: cases.CacheReadWrite}}
		c, err := newResponseCache(kase, tr, models.Settings{Model: "m"}, 1)
		if err != nil {
			t.Fatal(err)
		}
		if other, ok := seen[c.identity]; ok {
			t.Fatalf("%s and %s share a cache identity", other, p)
		}
		seen[c.identity] = p
	}
}

// OpenAI's two APIs share a fleet-wide limit for a model at an endpoint
// (one account's rate limits); Anthropic's is its own, and Chat
// Completions keeps the key it had.
func TestOpenAIsTwoAPIsShareALimit(t *testing.T) {
	if limitProvider(cases.ProviderOpenAIResponses) != limitProvider(cases.ProviderOpenAI) {
		t.Fatal("the Responses API and Chat Completions are limited apart")
	}
	if limitProvider(cases.ProviderOpenAI) != "openai" || limitProvider(cases.ProviderAnthropic) != "anthropic" {
		t.Fatal("a limit key changed")
	}
}
