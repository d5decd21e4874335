package responses

import (
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/factline/factline/models/openai"
)

// Defaults of Config's zero fields.
const (
	DefaultBaseURL             = openai.DefaultBaseURL
	DefaultTimeout             = 120 * time.Second
	DefaultMaxRetries          = 4
	DefaultMaxBackoff          = 30 * time.Second
	DefaultBytesPerToken       = 4
	DefaultReserveOutputTokens = 4096
)

// Config configures a provider for one OpenAI Responses API endpoint. The
// zero value of every field but Model means its default. Printing a Config
// (fmt, slog) never shows the API key.
type Config struct {
	// BaseURL is the API root the path "responses" is appended to.
	// Default DefaultBaseURL.
	BaseURL string
	// Model is the model asked for when a request's Settings.Model is empty.
	Model string
	// APIKey is sent as "Authorization: Bearer <key>" and nowhere else.
	// Required for api.openai.com.
	APIKey string
	// Timeout bounds each attempt. A timed out attempt is not retried.
	// Default DefaultTimeout.
	Timeout time.Duration
	// MaxRetries is how many times a call is retried after the first
	// attempt on 429, 5xx and connection errors. 0 means
	// DefaultMaxRetries, a negative value no retries.
	MaxRetries int
	// MaxBackoff caps one wait between attempts. A Retry-After longer than
	// it ends the retries at once. Default DefaultMaxBackoff.
	MaxBackoff time.Duration
	// InputPrice and OutputPrice are the prices of one million input and
	// output tokens in budget cost units; 0 is unknown, and then every
	// cost is. CacheReadPrice prices the cached input (0: InputPrice, an
	// upper bound); CacheWritePrice the input written to the prompt cache
	// (0: unknown, so a call that wrote any has an unknown cost).
	InputPrice, OutputPrice         uint64
	CacheReadPrice, CacheWritePrice uint64
	// BytesPerToken is the divisor of the rendered request's size in the
	// input token estimate of Reserve. Default DefaultBytesPerToken.
	BytesPerToken int
	// ReserveOutputTokens is the output Reserve assumes for a request
	// without Settings.MaxOutputTokens. Default DefaultReserveOutputTokens.
	ReserveOutputTokens int
	// HTTPClient sends the requests; nil means a client with Go's default
	// transport.
	HTTPClient *http.Client
	// MaxReplyBytes bounds the body of one answer: a longer one fails the
	// call as a bad response naming the bound, not retried. 0 means
	// httpmodel.DefaultMaxReplyBytes (32 MiB).
	MaxReplyBytes int64
}

// FromEnv returns c with its empty BaseURL, Model and APIKey and its zero
// prices filled from the environment OpenAI's Chat Completions provider
// reads (openai.Config.FromEnv: FACTLINE_OPENAI_BASE_URL, else
// OPENAI_BASE_URL, and so on): the Responses API is served at the same
// root with the same key.
func (c Config) FromEnv() (Config, error) {
	o, err := openai.Config{BaseURL: c.BaseURL, Model: c.Model, APIKey: c.APIKey,
		InputPrice: c.InputPrice, OutputPrice: c.OutputPrice}.FromEnv()
	if err != nil {
		return c, err
	}
	c.BaseURL, c.Model, c.APIKey, c.InputPrice, c.OutputPrice = o.BaseURL, o.Model, o.APIKey, o.InputPrice, o.OutputPrice
	return c, nil
}

// Endpoint is the API root a model configured with baseURL talks to, as
// New resolves it (openai.Endpoint: the same root as Chat Completions).
func Endpoint(baseURL string) string { return openai.Endpoint(baseURL) }

func (c Config) keyState() string {
	if c.APIKey == "" {
		return "unset"
	}
	return "[redacted]"
}

// String shows the configuration without the API key.
func (c Config) String() string {
	return fmt.Sprintf("responses.Config{BaseURL:%q Model:%q APIKey:%s Timeout:%s MaxRetries:%d MaxBackoff:%s InputPrice:%d OutputPrice:%d}",
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
