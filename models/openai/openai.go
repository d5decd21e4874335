// Package openai is the model provider for any OpenAI-compatible Chat
// Completions endpoint with tool calling: OpenAI itself, vLLM, Ollama, the
// llama.cpp server and the like. It builds requests with the official SDK
// (github.com/openai/openai-go/v3), sends exactly the bytes Render returns,
// retries 429, 5xx and connection errors itself (the SDK's retries are off)
// and maps replies, usage and failures onto the models port. docs/models.md
// describes it for operators.
package openai

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strings"
	"time"

	sdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/factline/factline/internal/sleep"
	"github.com/factline/factline/models"
	"github.com/factline/factline/models/internal/httpmodel"
)

// Provider is the provider name of this package's models.
const Provider = "openai"

// Model talks to one OpenAI-compatible endpoint. It is safe for concurrent
// use. Printing it never shows the API key.
type Model struct {
	cfg    Config // with APIKey cleared: the key lives only in svc and redact
	svc    sdk.ChatCompletionService
	redact func(string) string

	// Test seams: how to wait between attempts, the clock for HTTP-date
	// Retry-After values and the jitter source (a value in [0, 1)).
	sleep  func(ctx context.Context, d time.Duration) error
	now    func() time.Time
	jitter func() float64
}

var _ models.Model = (*Model)(nil)

// New validates cfg, applies its defaults and returns a Model. Errors are
// *models.Error values of kind ErrConfig.
func New(cfg Config) (*Model, error) {
	if cfg.BaseURL == "" {
		cfg.BaseURL = DefaultBaseURL
	}
	u, err := url.Parse(cfg.BaseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, configError("base URL %q is not an http(s) URL", cfg.BaseURL)
	}
	if u.User != nil {
		return nil, configError("base URL must not carry credentials: use APIKey")
	}
	if cfg.APIKey == "" && strings.EqualFold(u.Hostname(), "api.openai.com") {
		return nil, configError("no API key for %s (set %s or %s)", u.Host, EnvAPIKey, EnvOpenAIKey)
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.Timeout < 0 {
		return nil, configError("negative timeout %s", cfg.Timeout)
	}
	switch {
	case cfg.MaxRetries == 0:
		cfg.MaxRetries = DefaultMaxRetries
	case cfg.MaxRetries < 0:
		cfg.MaxRetries = 0
	}
	if cfg.MaxBackoff == 0 {
		cfg.MaxBackoff = DefaultMaxBackoff
	}
	if cfg.MaxBackoff < 0 {
		return nil, configError("negative max backoff %s", cfg.MaxBackoff)
	}
	if cfg.BytesPerToken == 0 {
		cfg.BytesPerToken = DefaultBytesPerToken
	}
	if cfg.BytesPerToken < 0 {
		return nil, configError("negative bytes per token %d", cfg.BytesPerToken)
	}
	if cfg.ReserveOutputTokens == 0 {
		cfg.ReserveOutputTokens = DefaultReserveOutputTokens
	}
	if cfg.ReserveOutputTokens < 0 {
		return nil, configError("negative reserve output tokens %d", cfg.ReserveOutputTokens)
	}
	switch cfg.MaxTokensField {
	case "":
		cfg.MaxTokensField = MaxCompletionTokens
	case MaxCompletionTokens, MaxTokens:
	default:
		return nil, configError("max tokens field %q is neither %s nor %s", cfg.MaxTokensField, MaxCompletionTokens, MaxTokens)
	}
	client := cfg.HTTPClient
	if client == nil {
		client = &http.Client{}
	}
	if cfg.MaxReplyBytes < 0 {
		return nil, configError("negative max reply bytes %d", cfg.MaxReplyBytes)
	}
	client = httpmodel.BoundReplies(client, cfg.MaxReplyBytes)

	key := cfg.APIKey
	cfg.APIKey = ""
	opts := []option.RequestOption{
		option.WithBaseURL(cfg.BaseURL),
		option.WithHTTPClient(client),
		option.WithMaxRetries(0), // the retries are ours
	}
	if key != "" {
		opts = append(opts, option.WithAPIKey(key))
	}
	m := &Model{
		cfg:    cfg,
		svc:    sdk.NewChatCompletionService(opts...),
		redact: httpmodel.Redactor(key),
		sleep:  sleep.For,
		now:    time.Now,
		jitter: rand.Float64,
	}
	return m, nil
}

func configError(format string, args ...any) *models.Error {
	return &models.Error{Kind: models.ErrConfig, Provider: Provider, Err: fmt.Errorf(format, args...)}
}

// String describes the model without its key.
func (m *Model) String() string {
	return fmt.Sprintf("openai.Model{%s}", m.cfg.String())
}

// GoString is String: %#v must not show the key either.
func (m *Model) GoString() string { return m.String() }

// Provider returns "openai".
func (m *Model) Provider() string { return Provider }

// Complete renders req, POSTs exactly those bytes to <BaseURL>/chat/completions
// and maps the reply. It retries 429, 5xx and connection errors up to
// MaxRetries times, waiting an exponential backoff with jitter or what
// Retry-After / Retry-After-Ms asks (a longer ask than MaxBackoff ends the
// retries at once). Every error is a *models.Error with the attempts made,
// except a cancellation of ctx, which returns an error wrapping
// context.Canceled (a passed ctx deadline is ErrTimeout). A refused or
// filtered answer is a Reply with Finish "refusal", never retried; a request
// the provider refuses to process (HTTP 400 with a content-filter code) is
// ErrRefused. Every 429 and 503 is reported to the hook ctx carries
// (models.WithThrottleHook). Errors never contain the API key.
func (m *Model) Complete(ctx context.Context, req models.Request) (models.Reply, error) {
	params, body, err := m.build(req)
	if err != nil {
		return models.Reply{}, err
	}
	retry := httpmodel.Retry{Provider: Provider, MaxRetries: m.cfg.MaxRetries, MaxBackoff: m.cfg.MaxBackoff, Sleep: m.sleep, Jitter: m.jitter}
	return retry.Do(ctx, func(ctx context.Context) (models.Reply, *httpmodel.Failure) {
		reply, f := m.attempt(ctx, params, body)
		if f == nil {
			return reply, nil
		}
		return models.Reply{}, &httpmodel.Failure{Err: f.err, Retry: f.retry, CtxErr: f.ctxErr}
	})
}

// backoff is the wait after failed attempt n (1-based), as
// httpmodel.Backoff has it for every hosted provider.
func (m *Model) backoff(n int, retryAfter time.Duration) time.Duration {
	return httpmodel.Backoff(n, retryAfter, m.cfg.MaxBackoff, m.jitter)
}
