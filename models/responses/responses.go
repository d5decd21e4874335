// Package responses is the model provider for OpenAI's Responses API with
// function calling. It builds requests with the official SDK
// (github.com/openai/openai-go/v3/responses), sends exactly the bytes
// Render returns, statelessly (store: false; every call carries the whole
// context), retries 429, 5xx and connection errors itself (the SDK's
// retries are off) and maps replies, usage (cached and cache-written
// input, reasoning tokens) and failures onto the models port. Package
// responsestest is a wire-level fake of the API for tests. docs/models.md
// describes it for operators.
package responses

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/openai/openai-go/v3/option"
	sdk "github.com/openai/openai-go/v3/responses"

	"github.com/factline/factline/internal/sleep"
	"github.com/factline/factline/models"
	"github.com/factline/factline/models/internal/httpmodel"
	"github.com/factline/factline/models/openai"
)

// Provider is the provider name of this package's models.
const Provider = "openai-responses"

// Model talks to one Responses API endpoint. It is safe for concurrent
// use. Printing it never shows the API key.
type Model struct {
	cfg    Config // with APIKey cleared: the key lives only in svc and redact
	svc    sdk.ResponseService
	prices httpmodel.Prices
	errs   httpmodel.Errors
	retry  httpmodel.Retry
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
		return nil, configError("no API key for %s (set %s or %s)", u.Host, openai.EnvAPIKey, openai.EnvOpenAIKey)
	}
	for _, d := range []struct {
		name string
		v    *time.Duration
		def  time.Duration
	}{{"timeout", &cfg.Timeout, DefaultTimeout}, {"max backoff", &cfg.MaxBackoff, DefaultMaxBackoff}} {
		if *d.v == 0 {
			*d.v = d.def
		}
		if *d.v < 0 {
			return nil, configError("negative %s %s", d.name, *d.v)
		}
	}
	for _, n := range []struct {
		name string
		v    *int
		def  int
	}{{"bytes per token", &cfg.BytesPerToken, DefaultBytesPerToken}, {"reserve output tokens", &cfg.ReserveOutputTokens, DefaultReserveOutputTokens}} {
		if *n.v == 0 {
			*n.v = n.def
		}
		if *n.v < 0 {
			return nil, configError("negative %s %d", n.name, *n.v)
		}
	}
	switch {
	case cfg.MaxRetries == 0:
		cfg.MaxRetries = DefaultMaxRetries
	case cfg.MaxRetries < 0:
		cfg.MaxRetries = 0
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
	return &Model{
		cfg:    cfg,
		svc:    sdk.NewResponseService(opts...),
		prices: httpmodel.Prices{Input: cfg.InputPrice, Output: cfg.OutputPrice, CacheRead: cfg.CacheReadPrice, CacheWrite: cfg.CacheWritePrice},
		errs:   httpmodel.Errors{Provider: Provider, Redact: httpmodel.Redactor(key), Now: time.Now, Detail: errorDetail, Refusal: isContentFilter},
		retry: httpmodel.Retry{Provider: Provider, MaxRetries: cfg.MaxRetries, MaxBackoff: cfg.MaxBackoff,
			Sleep: sleep.For, Jitter: rand.Float64},
	}, nil
}

func configError(format string, args ...any) *models.Error {
	return &models.Error{Kind: models.ErrConfig, Provider: Provider, Err: fmt.Errorf(format, args...)}
}

// String describes the model without its key.
func (m *Model) String() string { return fmt.Sprintf("responses.Model{%s}", m.cfg.String()) }

// GoString is String: %#v must not show the key either.
func (m *Model) GoString() string { return m.String() }

// Provider returns "openai-responses".
func (m *Model) Provider() string { return Provider }

// Complete renders req, POSTs exactly those bytes to <BaseURL>/responses
// and maps the reply. It retries 429, 5xx and connection errors up to
// MaxRetries times, waiting an exponential backoff with jitter or what
// Retry-After / Retry-After-Ms asks (a longer ask than MaxBackoff ends the
// retries at once). Every error is a *models.Error with the attempts made,
// except a cancellation of ctx, which wraps context.Canceled. A refusal
// in the output, or a response incomplete for its content filter, is a
// Reply with Finish "refusal", never retried; one incomplete at
// max_output_tokens is Finish "length"; a request refused by a content
// filter (HTTP 400 with such a code) is ErrRefused. Every 429 and 503 is
// reported to the hook ctx carries (models.WithThrottleHook). Errors never
// contain the API key.
func (m *Model) Complete(ctx context.Context, req models.Request) (models.Reply, error) {
	params, body, err := m.build(req)
	if err != nil {
		return models.Reply{}, err
	}
	return m.retry.Do(ctx, func(ctx context.Context) (models.Reply, *httpmodel.Failure) {
		return m.attempt(ctx, params, body)
	})
}

// attempt makes one HTTP call with body (the rendered bytes, as they
// are) and maps its outcome.
func (m *Model) attempt(ctx context.Context, params sdk.ResponseNewParams, body []byte) (models.Reply, *httpmodel.Failure) {
	return m.errs.Attempt(ctx, m.cfg.Timeout, m.prices, func(ctx context.Context, raw *[]byte, resp **http.Response) error {
		_, err := m.svc.New(ctx, params,
			option.WithRequestBody("application/json", body),
			option.WithResponseBodyInto(raw),
			option.WithResponseInto(resp),
		)
		return err
	}, ParseReply)
}

// errorDetail reads OpenAI's error body, {"error":{"message","type","code"}}:
// its message and its code, else its type.
func errorDetail(data []byte) (msg, code string) {
	var e struct {
		Error struct {
			Message string `json:"message"`
			Code    any    `json:"code"`
			Type    string `json:"type"`
		} `json:"error"`
	}
	if json.Unmarshal(data, &e) != nil {
		return "", ""
	}
	if c, ok := e.Error.Code.(string); ok {
		code = c
	}
	if code == "" {
		code = e.Error.Type
	}
	return e.Error.Message, code
}

// isContentFilter reports whether an error code says the request itself
// was refused by a safety filter.
func isContentFilter(code string) bool {
	switch code {
	case "content_filter", "content_policy_violation", "content_policy":
		return true
	}
	return false
}
