package openai

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
	DefaultBaseURL             = "https://api.openai.com/v1"
	DefaultTimeout             = 120 * time.Second
	DefaultMaxRetries          = 4
	DefaultMaxBackoff          = 30 * time.Second
	DefaultBytesPerToken       = 4
	DefaultReserveOutputTokens = 4096
)

// Names of the request field that carries Settings.MaxOutputTokens.
const (
	// MaxCompletionTokens is the current Chat Completions field (OpenAI;
	// OpenAI's reasoning models refuse the older one).
	MaxCompletionTokens = "max_completion_tokens"
	// MaxTokens is the older field, which local servers commonly expect.
	MaxTokens = "max_tokens"
)

// Environment variables read by Config.FromEnv.
const (
	EnvBaseURL     = "FACTLINE_OPENAI_BASE_URL"
	EnvModel       = "FACTLINE_OPENAI_MODEL"
	EnvAPIKey      = "FACTLINE_OPENAI_API_KEY"
	EnvInputPrice  = "FACTLINE_OPENAI_INPUT_PRICE"
	EnvOutputPrice = "FACTLINE_OPENAI_OUTPUT_PRICE"
	EnvMaxTokens   = "FACTLINE_OPENAI_MAX_TOKENS_FIELD"
	EnvOpenAIKey   = "OPENAI_API_KEY"  // fallback for EnvAPIKey
	EnvOpenAIBase  = "OPENAI_BASE_URL" // fallback for EnvBaseURL
)

// redactedMessage stands for the API key wherever it would appear.
const redactedMessage = "[redacted]"

// Config configures a provider for one OpenAI-compatible Chat Completions
// endpoint. The zero value of every field but Model means its default.
// Printing a Config (fmt, slog) never shows the API key.
type Config struct {
	// BaseURL is the API root the path "chat/completions" is appended to,
	// e.g. "http://127.0.0.1:8000/v1" for vLLM. Default DefaultBaseURL.
	BaseURL string
	// Model is the model asked for when a request's Settings.Model is empty.
	Model string
	// APIKey is sent as "Authorization: Bearer <key>" and nowhere else. It
	// may be empty for local servers that need none (not for api.openai.com).
	APIKey string
	// Timeout bounds each attempt (request and reading the reply). A timed
	// out attempt is not retried. Default DefaultTimeout.
	Timeout time.Duration
	// MaxRetries is how many times a call is retried after the first
	// attempt on 429, 5xx and connection errors. 0 means DefaultMaxRetries,
	// a negative value no retries.
	MaxRetries int
	// MaxBackoff caps one wait between attempts. A Retry-After longer than
	// it ends the retries at once. Default DefaultMaxBackoff.
	MaxBackoff time.Duration
	// InputPrice and OutputPrice are the prices of one million input and
	// output tokens in budget cost units. 0 means unknown, and a cost with
	// an unknown part is unknown: unless both are set, Usage.Cost stays nil
	// and Reserve returns 0.
	InputPrice  uint64
	OutputPrice uint64
	// BytesPerToken is the divisor of the rendered request's size in the
	// input token estimate of Reserve. Default DefaultBytesPerToken; 1 gives
	// a bound for byte-level tokenizers.
	BytesPerToken int
	// ReserveOutputTokens is the output Reserve assumes for a request
	// without Settings.MaxOutputTokens. Default DefaultReserveOutputTokens.
	ReserveOutputTokens int
	// MaxTokensField is the request field for Settings.MaxOutputTokens:
	// MaxCompletionTokens (default) or MaxTokens.
	MaxTokensField string
	// HTTPClient sends the requests; nil means a client with Go's default
	// transport. Its own Timeout, if any, also applies.
	HTTPClient *http.Client
	// MaxReplyBytes bounds the body of one answer: a longer one fails the
	// call as a bad response naming the bound, not retried. 0 means
	// httpmodel.DefaultMaxReplyBytes (32 MiB).
	MaxReplyBytes int64
}

// FromEnv returns c with its empty BaseURL, Model, APIKey and
// MaxTokensField and its zero prices filled from the environment:
// FACTLINE_OPENAI_BASE_URL (else OPENAI_BASE_URL), FACTLINE_OPENAI_MODEL,
// FACTLINE_OPENAI_API_KEY (else OPENAI_API_KEY),
// FACTLINE_OPENAI_MAX_TOKENS_FIELD, FACTLINE_OPENAI_INPUT_PRICE and
// FACTLINE_OPENAI_OUTPUT_PRICE (cost units per million tokens). Values
// already set in c win. It fails only on a price that is not an unsigned
// integer; New checks the rest.
func (c Config) FromEnv() (Config, error) {
	if c.BaseURL == "" {
		c.BaseURL = firstEnv(EnvBaseURL, EnvOpenAIBase)
	}
	if c.Model == "" {
		c.Model = os.Getenv(EnvModel)
	}
	if c.APIKey == "" {
		c.APIKey = firstEnv(EnvAPIKey, EnvOpenAIKey)
	}
	if c.MaxTokensField == "" {
		c.MaxTokensField = os.Getenv(EnvMaxTokens)
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
			return c, fmt.Errorf("openai: %s: want cost units per million tokens, got %q", p.env, s)
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

// priced reports whether the prices are known.
func (c Config) priced() bool { return c.InputPrice > 0 && c.OutputPrice > 0 }

// keyState describes the key without showing it.
func (c Config) keyState() string {
	if c.APIKey == "" {
		return "unset"
	}
	return redactedMessage
}

// String shows the configuration without the API key.
func (c Config) String() string {
	return fmt.Sprintf("openai.Config{BaseURL:%q Model:%q APIKey:%s Timeout:%s MaxRetries:%d MaxBackoff:%s InputPrice:%d OutputPrice:%d}",
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
		slog.Uint64("input_price", c.InputPrice),
		slog.Uint64("output_price", c.OutputPrice),
	)
}

// Endpoint is the API root a model configured with baseURL talks to, as
// New resolves it: baseURL, else the environment's (FromEnv), else
// DefaultBaseURL. Replies of two endpoints are never taken for each
// other's (the runner's response cache keys on it).
func Endpoint(baseURL string) string {
	if baseURL == "" {
		baseURL = firstEnv(EnvBaseURL, EnvOpenAIBase)
	}
	if baseURL == "" {
		baseURL = DefaultBaseURL
	}
	return baseURL
}
