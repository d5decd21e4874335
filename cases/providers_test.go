package cases

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// A treatment may name Anthropic's Messages API or OpenAI's Responses API
// beside Chat Completions, with the prices of cache reads and writes.
func TestTheNativeProvidersAreTreatmentProviders(t *testing.T) {
	for _, yaml := range []string{
		"id: t\nmodel: {provider: anthropic, name: claude-x, base_url: 'http://127.0.0.1:1', reasoning_effort: high, cache_read_price: 30, cache_write_price: 375}\n",
		"id: t\nmodel: {provider: openai-responses, name: gpt-x, temperature: 0, top_p: 0.5, reasoning_effort: minimal, cache_read_price: 1}\n",
	} {
		tr, err := ParseTreatment("t.yaml", []byte(yaml))
		if err != nil {
			t.Fatalf("%q: %v", yaml, err)
		}
		b, _ := tr.Encode()
		back, err := DecodeTreatment(b)
		if err != nil || back.Model.Provider != tr.Model.Provider || back.Model.CacheReadPrice != tr.Model.CacheReadPrice ||
			back.Model.CacheWritePrice != tr.Model.CacheWritePrice {
			t.Fatalf("round trip of %s: %+v, %v", b, back, err)
		}
	}
}

// Settings a provider's API cannot carry, a hosted model without a name
// and an unknown provider are refused when the treatment is loaded,
// naming the field.
func TestProviderSettingsAreCheckedWhenLoaded(t *testing.T) {
	for _, c := range []struct{ yaml, want string }{
		{"id: t\nmodel: {provider: anthropic, name: m, temperature: 0}\n", `model.temperature: provider "anthropic" takes no temperature`},
		{"id: t\nmodel: {provider: anthropic, name: m, top_p: 0.9}\n", `model.top_p: provider "anthropic" takes no top_p`},
		{"id: t\nmodel: {provider: anthropic, name: m, seed: 1}\n", `model.seed: provider "anthropic" takes no seed`},
		{"id: t\nmodel: {provider: anthropic, name: m, reasoning_effort: minimal}\n", `model.reasoning_effort: provider "anthropic" takes one of`},
		{"id: t\nmodel: {provider: openai-responses, name: m, seed: 1}\n", `model.seed: provider "openai-responses" takes no seed`},
		{"id: t\nmodel: {provider: anthropic}\n", `model.name: required for provider "anthropic"`},
		{"id: t\nmodel: {provider: openai-responses}\n", `model.name: required for provider "openai-responses"`},
		{"id: t\nmodel: {provider: gemini, name: m}\n", `unknown provider "gemini" (want one of ["scripted" "openai" "openai-responses" "anthropic"])`},
	} {
		_, err := ParseTreatment("t.yaml", []byte(c.yaml))
		if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: got %v, want %q", c.yaml, err, c.want)
		}
	}
}

// A judge may be a native provider's model too, under the same checks.
func TestAJudgeMayBeANativeProvidersModel(t *testing.T) {
	judge := func(model string) string {
		return "id: c\ninstruction: x\ngrading:\n  instruments:\n    - {id: review, kind: judge, rubric: 'is it right?', model: " + model + "}\n"
	}
	if _, err := ParseCase("c.yaml", []byte(judge("{provider: anthropic, name: claude-judge}"))); err != nil {
		t.Fatalf("an Anthropic judge: %v", err)
	}
	if _, err := ParseCase("c.yaml", []byte(judge("{provider: openai-responses, name: gpt-judge}"))); err != nil {
		t.Fatalf("a Responses judge: %v", err)
	}
	_, err := ParseCase("c.yaml", []byte(judge("{provider: anthropic, name: claude-judge, temperature: 0}")))
	if err == nil || !strings.Contains(err.Error(), "takes no temperature") {
		t.Fatalf("an Anthropic judge with a temperature: %v", err)
	}
}

// A base_url no provider could call (no http or https scheme, no host, or
// credentials in it) is refused when the treatment or the judge is loaded,
// naming the field: before, the suite was submitted and every run ended
// errored as a harness error at its first turn, which a retry repeats.
func TestAnUncallableBaseURLIsRefusedWhenLoaded(t *testing.T) {
	for _, p := range []string{"openai", "openai-responses", "anthropic"} {
		for _, c := range []struct{ url, want string }{
			{"127.0.0.1:8000/v1", "want an http:// or https:// URL"},
			{"localhost:11434/v1", "want an http:// or https:// URL"},
			{"ftp://127.0.0.1/v1", "want an http:// or https:// URL"},
			{"http:///v1", "has no host"},
			{"http://user:pw@127.0.0.1:8000/v1", "carries credentials"},
		} {
			yaml := "id: t\nmodel: {provider: " + p + ", name: m, base_url: '" + c.url + "'}\n"
			_, err := ParseTreatment("t.yaml", []byte(yaml))
			if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "model.base_url: ") || !strings.Contains(err.Error(), c.want) {
				t.Errorf("%q: got %v, want model.base_url: …%s", yaml, err, c.want)
			}
		}
		if _, err := ParseTreatment("t.yaml", []byte("id: t\nmodel: {provider: "+p+", name: m, base_url: 'http://[::1]:8000/v1'}\n")); err != nil {
			t.Errorf("%s: a good base_url refused: %v", p, err)
		}
	}
	judge := "id: c\ninstruction: x\ngrading:\n  instruments:\n    - {id: review, kind: judge, rubric: 'is it right?', model: {provider: openai, name: j, base_url: '127.0.0.1:8000/v1'}}\n"
	if _, err := ParseCase("c.yaml", []byte(judge)); err == nil || !strings.Contains(err.Error(), "model.base_url: ") {
		t.Errorf("a judge's uncallable base_url: %v", err)
	}
}

// A negative max_output_tokens was accepted and then never sent (the
// providers send only a positive maximum): a setting the user wrote was
// dropped in silence, and the budget reserved the default instead. It is
// refused when loaded, naming the field, for a treatment and a judge. (0
// reads as the field left out, as every whole-number setting's zero does.)
func TestAMaxOutputTokensBelowOneIsRefused(t *testing.T) {
	for _, v := range []string{"-1", "-4096"} {
		_, err := ParseTreatment("t.yaml", []byte("id: t\nmodel: {provider: openai, name: m, max_output_tokens: "+v+"}\n"))
		if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "model.max_output_tokens") || !strings.Contains(err.Error(), "at least 1") {
			t.Errorf("max_output_tokens %s: got %v", v, err)
		}
	}
	judge := "id: c\ninstruction: x\ngrading:\n  instruments:\n    - {id: review, kind: judge, rubric: 'is it right?', model: {provider: openai, name: j, max_output_tokens: -5}}\n"
	if _, err := ParseCase("c.yaml", []byte(judge)); err == nil || !strings.Contains(err.Error(), "model.max_output_tokens") {
		t.Errorf("a judge's max_output_tokens -5: %v", err)
	}
	if _, err := ParseTreatment("t.yaml", []byte("id: t\nmodel: {provider: openai, name: m, max_output_tokens: 1}\n")); err != nil {
		t.Errorf("max_output_tokens 1: %v", err)
	}
}

// A model timeout is a duration of at least a second, on a hosted model
// only: anything else would be dropped in silence or cut every call.
func TestAModelTimeoutIsCheckedWhenLoaded(t *testing.T) {
	for _, c := range []struct{ spec, want string }{
		{"{provider: openai, name: m, timeout: 500ms}", "at least 1s"},
		{"{provider: openai, name: m, timeout: soon}", "model.timeout"},
		{"{provider: anthropic, name: m, timeout: -5m}", "negative"},
		{"{provider: scripted, scripts: s, timeout: 5m}", "hosted provider"},
	} {
		_, err := ParseTreatment("t.yaml", []byte("id: t\nmodel: "+c.spec+"\n"))
		if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "model.timeout") || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want model.timeout and %q", c.spec, err, c.want)
		}
	}
	judge := "id: c\ninstruction: x\ngrading:\n  instruments:\n    - {id: review, kind: judge, rubric: 'is it right?', model: {provider: openai, name: j, timeout: 10ms}}\n"
	if _, err := ParseCase("c.yaml", []byte(judge)); err == nil || !strings.Contains(err.Error(), "model.timeout") {
		t.Errorf("a judge's timeout 10ms: %v", err)
	}
	tr, err := ParseTreatment("t.yaml", []byte("id: t\nmodel: {provider: openai, name: m, timeout: 10m}\n"))
	if err != nil || tr.Model.Timeout.Std() != 10*time.Minute {
		t.Errorf("timeout 10m: %v %+v", err, tr)
	}
}

// A model's max_reply_bytes is a whole number of bytes from
// MinMaxReplyBytes to MaxMaxReplyBytes (0, as left out: the default), on
// a hosted model only; the error names the field and what it should
// hold.
func TestAModelMaxReplyBytesIsCheckedWhenLoaded(t *testing.T) {
	for _, c := range []struct{ spec, want string }{
		{"{provider: openai, name: m, max_reply_bytes: -1}", "at least 1024"},
		{"{provider: openai-responses, name: m, max_reply_bytes: 100}", "at least 1024"},
		{"{provider: anthropic, name: m, max_reply_bytes: 1099511627776}", "at most 1073741824"},
		{"{provider: openai, name: m, max_reply_bytes: lots}", "model.max_reply_bytes"},
		{"{provider: scripted, scripts: s, max_reply_bytes: 4096}", "hosted provider"},
	} {
		_, err := ParseTreatment("t.yaml", []byte("id: t\nmodel: "+c.spec+"\n"))
		if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "model.max_reply_bytes") || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want model.max_reply_bytes and %q", c.spec, err, c.want)
		}
	}
	tr, err := ParseTreatment("t.yaml", []byte("id: t\nmodel: {provider: openai, name: m, max_reply_bytes: 67108864}\n"))
	if err != nil || tr.Model.MaxReplyBytes != 64<<20 {
		t.Errorf("max_reply_bytes 64 MiB: %v %+v", err, tr)
	}
}
