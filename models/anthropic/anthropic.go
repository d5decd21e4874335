// Package anthropic is the model provider for Anthropic's Messages API
// with tool use (tool_use and tool_result blocks). It builds requests with
// the official SDK (github.com/anthropics/anthropic-sdk-go), sends exactly
// the bytes Render returns, retries 429, 5xx, 529 (overloaded) and
// connection errors itself (the SDK's retries are off) and maps replies,
// usage (cache reads and writes, thinking tokens) and failures onto the
// models port. Package anthropictest is a wire-level fake of the API for
// tests. docs/models.md describes it for operators.
package anthropic

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strings"
	"time"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"

	"github.com/factline/factline/internal/sleep"
	"github.com/factline/factline/models"
	"github.com/factline/factline/models/internal/httpmodel"
)

// Provider is the provider name of this package's models.
const Provider = "anthropic"

// Model talks to one Messages API endpoint. It is safe for concurrent use.
// Printing it never shows the API key.
type Model struct {
	cfg    Config // with APIKey cleared: the key lives only in svc and redact
	svc    sdk.MessageService
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
	if cfg.APIKey == "" && strings.EqualFold(u.Hostname(), "api.anthropic.com") {
		return nil, configError("no API key for %s (set %s or %s)", u.Host, EnvAPIKey, EnvAnthropicKey)
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
	}{{"bytes per token", &cfg.BytesPerToken, DefaultBytesPerToken}, {"max tokens", &cfg.MaxTokens, DefaultMaxTokens}} {
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
	// No environment default reaches the service: it is built from these
	// options alone, never from ANTHROPIC_* variables or profile files
	// behind the configuration's back.
	opts := []option.RequestOption{
		option.WithBaseURL(cfg.BaseURL),
		option.WithHTTPClient(client),
		option.WithMaxRetries(0), // the retries are ours
		// Ours too: the SDK would otherwise derive one from max_tokens and
		// refuse a large one without streaming.
		option.WithRequestTimeout(cfg.Timeout),
	}
	if key != "" {
		opts = append(opts, option.WithAPIKey(key))
	}
	redact := httpmodel.Redactor(key)
	return &Model{
		cfg:    cfg,
		svc:    sdk.NewMessageService(opts...),
		prices: httpmodel.Prices{Input: cfg.InputPrice, Output: cfg.OutputPrice, CacheRead: cfg.CacheReadPrice, CacheWrite: cfg.CacheWritePrice},
		errs:   httpmodel.Errors{Provider: Provider, Redact: redact, Now: time.Now, Detail: errorDetail, Refusal: isRefusal},
		retry: httpmodel.Retry{Provider: Provider, MaxRetries: cfg.MaxRetries, MaxBackoff: cfg.MaxBackoff,
			Sleep: sleep.For, Jitter: rand.Float64},
	}, nil
}

func configError(format string, args ...any) *models.Error {
	return &models.Error{Kind: models.ErrConfig, Provider: Provider, Err: fmt.Errorf(format, args...)}
}

// String describes the model without its key.
func (m *Model) String() string { return fmt.Sprintf("anthropic.Model{%s}", m.cfg.String()) }

// GoString is String: %#v must not show the key either.
func (m *Model) GoString() string { return m.String() }

// Provider returns "anthropic".
func (m *Model) Provider() string { return Provider }

// Complete renders req, POSTs exactly those bytes to <BaseURL>/v1/messages
// and maps the reply. It retries 429, 5xx, 529 (overloaded) and connection
// errors up to MaxRetries times, waiting an exponential backoff with
// jitter or what Retry-After asks (a longer ask than MaxBackoff ends the
// retries at once). Every error is a *models.Error with the attempts made,
// except a cancellation of ctx, which wraps context.Canceled. A reply
// whose stop_reason is "refusal" is a Reply with Finish "refusal", never
// retried; "max_tokens" is Finish "length". Every 429, 503 and 529 is
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
func (m *Model) attempt(ctx context.Context, params sdk.MessageNewParams, body []byte) (models.Reply, *httpmodel.Failure) {
	return m.errs.Attempt(ctx, m.cfg.Timeout, m.prices, func(ctx context.Context, raw *[]byte, resp **http.Response) error {
		_, err := m.svc.New(ctx, params,
			option.WithRequestBody("application/json", body),
			option.WithResponseBodyInto(raw),
			option.WithResponseInto(resp),
		)
		return err
	}, ParseReply)
}

// errorDetail reads Anthropic's error body,
// {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}:
// its message and its error type.
func errorDetail(data []byte) (msg, code string) {
	var e struct {
		Error struct {
			Type    string `json:"type"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal(data, &e) != nil {
		return "", ""
	}
	return e.Error.Message, e.Error.Type
}

// isRefusal: Anthropic refuses a request by its stop_reason, in a 200
// answer; no error type says a request itself was refused.
func isRefusal(string) bool { return false }
