package anthropic

import (
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"strconv"
	"time"
)

// Defaults of Config's zero fields.
const (
	DefaultBaseURL       = "https://api.anthropic.com"
	DefaultTimeout       = 120 * time.Second
	DefaultMaxRetries    = 4
	DefaultMaxBackoff    = 30 * time.Second
	DefaultBytesPerToken = 4
	// DefaultMaxTokens is the max_tokens sent when a request sets no
	// Settings.MaxOutputTokens: the Messages API requires the field.
	DefaultMaxTokens = 4096
)

// Environment variables read by Config.FromEnv.
const (
	EnvBaseURL          = "FACTLINE_ANTHROPIC_BASE_URL"
	EnvModel            = "FACTLINE_ANTHROPIC_MODEL"
	EnvAPIKey           = "FACTLINE_ANTHROPIC_API_KEY"
	EnvInputPrice       = "FACTLINE_ANTHROPIC_INPUT_PRICE"
	EnvOutputPrice      = "FACTLINE_ANTHROPIC_OUTPUT_PRICE"
	EnvAnthropicKey     = "ANTHROPIC_API_KEY"  // fallback for EnvAPIKey
	EnvAnthropicBaseURL = "ANTHROPIC_BASE_URL" // fallback for EnvBaseURL
)

// Config configures a provider for the Anthropic Messages API. The zero
// value of every field but Model means its default. Printing a Config
// (fmt, slog) never shows the API key.
type Config struct {
	// BaseURL is the API root the path "v1/messages" is appended to, as
	// ANTHROPIC_BASE_URL is for Anthropic's own tools. Default
	// DefaultBaseURL.
	BaseURL string
	// Model is the model asked for when a request's Settings.Model is empty.
	Model string
	// APIKey is sent in the header the SDK puts it in and nowhere else.
	// Required for api.anthropic.com.
	APIKey string
	// Timeout bounds each attempt. A timed out attempt is not retried.
	// Default DefaultTimeout.
	Timeout time.Duration
	// MaxRetries is how many times a call is retried after the first
	// attempt on 429, 5xx, 529 and connection errors. 0 means
	// DefaultMaxRetries, a negative value no retries.
	MaxRetries int
	// MaxBackoff caps one wait between attempts. A Retry-After longer than
	// it ends the retries at once. Default DefaultMaxBackoff.
	MaxBackoff time.Duration
	// InputPrice and OutputPrice are the prices of one million input and
	// output tokens in budget cost units; 0 is unknown, and then every
	// cost is. CacheReadPrice prices the input read from the prompt cache
	// (0: InputPrice, an upper bound); CacheWritePrice the input written
	// to it (0: unknown, so a call that wrote any has an unknown cost).
	InputPrice, OutputPrice         uint64
	CacheReadPrice, CacheWritePrice uint64
	// BytesPerToken is the divisor of the rendered request's size in the
	// input token estimate of Reserve. Default DefaultBytesPerToken.
	BytesPerToken int
	// MaxTokens is the max_tokens of a request without
	// Settings.MaxOutputTokens. Default DefaultMaxTokens.
	MaxTokens int
	// HTTPClient sends the requests; nil means a client with Go's default
	// transport.
	HTTPClient *http.Client
	// MaxReplyBytes bounds the body of one answer: a longer one fails the
	// call as a bad response naming the bound, not retried. 0 means
	// httpmodel.DefaultMaxReplyBytes (32 MiB).
	MaxReplyBytes int64
}

// FromEnv returns c with its empty BaseURL, Model and APIKey and its zero
// input and output prices filled from the environment:
// FACTLINE_ANTHROPIC_BASE_URL (else ANTHROPIC_BASE_URL),
// FACTLINE_ANTHROPIC_MODEL, FACTLINE_ANTHROPIC_API_KEY (else
// ANTHROPIC_API_KEY), FACTLINE_ANTHROPIC_INPUT_PRICE and
// FACTLINE_ANTHROPIC_OUTPUT_PRICE. Values already set in c win. It fails
// only on a price that is not an unsigned integer.
func (c Config) FromEnv() (Config, error) {
	if c.BaseURL == "" {
		c.BaseURL = firstEnv(EnvBaseURL, EnvAnthropicBaseURL)
	}
	if c.Model == "" {
		c.Model = os.Getenv(EnvModel)
	}
	if c.APIKey == "" {
		c.APIKey = firstEnv(EnvAPIKey, EnvAnthropicKey)
	}
	for _, p := range []struct {
		env   string
		price *uint64
	}{{EnvInputPrice, &c.InputPrice}, {EnvOutputPrice, &c.OutputPrice}} {
		s := os.Getenv(p.env)
		if s == "" || *p.price != 0 {
			continue
		}
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			return c, fmt.Errorf("anthropic: %s: want cost units per million tokens, got %q", p.env, s)
		}
		*p.price = v
	}
	return c, nil
}

func firstEnv(names ...string) string {
	for _, n := range names {
		if v := os.Getenv(n); v != "" {
			return v
		}
	}
	return ""
}

// Endpoint is the API root a model configured with baseURL talks to, as
// New resolves it: baseURL, else the environment's, else DefaultBaseURL.
// The runner's response cache keys on it.
func Endpoint(baseURL string) string {
	if baseURL == "" {
		baseURL = firstEnv(EnvBaseURL, EnvAnthropicBaseURL)
	}
	if baseURL == "" {
		baseURL = DefaultBaseURL
	}
	return baseURL
}

// keyState describes the key without showing it.
func (c Config) keyState() string {
	if c.APIKey == "" {
		return "unset"
	}
	return "[redacted]"
}

// String shows the configuration without the API key.
func (c Config) String() string {
	return fmt.Sprintf("anthropic.Config{BaseURL:%q Model:%q APIKey:%s Timeout:%s MaxRetries:%d MaxBackoff:%s InputPrice:%d OutputPrice:%d}",
		c.BaseURL, c.Model, c.keyState(), c.Timeout, c.MaxRetries, c.MaxBackoff, c.InputPrice, c.OutputPrice)
}

// GoString is String: %#v must not show the key either.
func (c Config) GoString() string { return c.String() }

// LogValue makes slog show the configuration without the API key.
func (c Config) LogValue() slog.Value {
	return slog.GroupValue(
		slog.String("base_url", c.BaseURL),
		slog.String("model", c.Model),
		slog.String("api_key", c.keyState()),
		slog.Duration("timeout", c.Timeout),
		slog.Int("max_retries", c.MaxRetries),
	)
}
