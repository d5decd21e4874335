package suites

import (
	"testing"

	"github.com/factline/factline/cases"
)

// The model component of a Chat Completions treatment is what it was
// before the native providers (and their cache prices) existed, key for
// key: no identity of an existing treatment changes. A native provider's
// component names its provider.
func TestTheModelComponentOfAnExistingTreatmentIsUnchanged(t *testing.T) {
	zero := 0.0
	c := &cases.Case{ID: "c1", Tools: []string{"read_file"}}
	for _, tc := range []struct {
		spec cases.ModelSpec
		want string
	}{
		{cases.ModelSpec{Provider: cases.ProviderOpenAI, Name: "m", BaseURL: "http://127.0.0.1:1/v1", Temperature: &zero, InputPrice: 2, OutputPrice: 8},
			`{"provider":"openai","name":"m","base_url":"http://127.0.0.1:1/v1","temperature":0,"input_price":2,"output_price":8}`},
		{cases.ModelSpec{Provider: cases.ProviderAnthropic, Name: "m", CacheWritePrice: 5},
			`{"provider":"anthropic","name":"m","cache_write_price":5}`},
		{cases.ModelSpec{Provider: cases.ProviderOpenAIResponses, Name: "m"},
			`{"provider":"openai-responses","name":"m"}`},
	} {
		_, comps, err := AgentIdentity(c, &cases.Treatment{ID: "t", Model: tc.spec})
		if err != nil {
			t.Fatal(err)
		}
		for _, comp := range comps {
			if comp.Name == ComponentModel && comp.Value != tc.want {
				t.Errorf("model component %s, want %s", comp.Value, tc.want)
			}
		}
	}
}
