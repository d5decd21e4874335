package hosted

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/factline/factline/cases"
	"github.com/factline/factline/models"
)

// Each hosted provider's spec builds that provider's model, configured
// from the spec; a scripted spec is not a hosted one.
func TestNewBuildsTheProviderTheSpecNames(t *testing.T) {
	for _, p := range []string{cases.ProviderOpenAI, cases.ProviderOpenAIResponses, cases.ProviderAnthropic} {
		m, err := New(cases.ModelSpec{Provider: p, Name: "m", BaseURL: "http://127.0.0.1:1/v1"})
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		if m.Provider() != p {
			t.Fatalf("spec %s built a %s model", p, m.Provider())
		}
		if got := Endpoint(cases.ModelSpec{Provider: p, BaseURL: "http://127.0.0.1:1/v1"}); got != "http://127.0.0.1:1/v1" {
			t.Fatalf("%s: endpoint %q", p, got)
		}
	}
	if _, err := New(cases.ModelSpec{Provider: cases.ProviderScripted}); err == nil || Is(cases.ProviderScripted) {
		t.Fatal("a scripted spec was taken for a hosted API")
	}
}

// A model that cannot be configured is a nil model and a config error,
// never a typed nil pointer inside a non-nil interface.
func TestABadSpecIsANilModel(t *testing.T) {
	t.Setenv("ANTHROPIC_API_KEY", "")
	t.Setenv("FACTLINE_ANTHROPIC_API_KEY", "")
	t.Setenv("FACTLINE_ANTHROPIC_BASE_URL", "")
	t.Setenv("ANTHROPIC_BASE_URL", "")
	m, err := New(cases.ModelSpec{Provider: cases.ProviderAnthropic, Name: "m"})
	if m != nil || models.KindOf(err) != models.ErrConfig {
		t.Fatalf("model %v, error %v: want none and a config error (no key for api.anthropic.com)", m, err)
	}
}

// A spec's timeout bounds each attempt of every hosted provider: a slow
// local model is given longer, a call that must not hang is cut sooner,
// instead of the providers' fixed default.
func TestASpecsTimeoutBoundsEachAttempt(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	defer close(release)
	t.Setenv("FACTLINE_ANTHROPIC_API_KEY", "k")
	for _, p := range []string{cases.ProviderOpenAI, cases.ProviderOpenAIResponses, cases.ProviderAnthropic} {
		m, err := New(cases.ModelSpec{Provider: p, Name: "m", BaseURL: srv.URL + "/v1", Timeout: cases.Duration(200 * time.Millisecond)})
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		_, err = m.Complete(ctx, models.Request{Messages: []models.Message{{Role: models.RoleUser, Content: "hi"}}})
		cancel()
		if models.KindOf(err) != models.ErrTimeout {
			t.Errorf("%s: a call the server never answers, under a 200ms timeout: %v, want a timeout", p, err)
		}
	}
}

// A spec's max_reply_bytes bounds the body of every hosted provider's
// answer: a body past it fails the call as bad_response naming the
// bound, where the default (32 MiB) would have taken it.
func TestASpecsMaxReplyBytesBoundsTheAnswer(t *testing.T) {
	body := `{"padding":"` + strings.Repeat("x", 8<<10) + `"}`
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(body))
	}))
	defer srv.Close()
	t.Setenv("FACTLINE_ANTHROPIC_API_KEY", "k")
	for _, p := range []string{cases.ProviderOpenAI, cases.ProviderOpenAIResponses, cases.ProviderAnthropic} {
		m, err := New(cases.ModelSpec{Provider: p, Name: "m", BaseURL: srv.URL + "/v1", MaxReplyBytes: 4 << 10})
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		_, err = m.Complete(context.Background(), models.Request{Messages: []models.Message{{Role: models.RoleUser, Content: "hi"}}})
		if models.KindOf(err) != models.ErrBadResponse || !strings.Contains(err.Error(), "4096-byte limit") {
			t.Errorf("%s: an 8 KiB answer under max_reply_bytes 4096: %v, want bad_response naming the 4096-byte limit", p, err)
		}
	}
}
