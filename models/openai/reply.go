package openai

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	sdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/factline/factline/models"
	"github.com/factline/factline/models/internal/httpmodel"
)

// maxErrorBody bounds how much of an error body is read for its message.
const maxErrorBody = 64 << 10

// maxMessage bounds the provider's message quoted in an error.
const maxMessage = 300

// failure is a failed attempt.
type failure struct {
	err   *models.Error
	retry bool
	// ctxErr is set when the caller's ctx ended: Complete maps it.
	ctxErr error
}

// attempt makes one HTTP call with body and maps its outcome.
func (m *Model) attempt(ctx context.Context, params sdk.ChatCompletionNewParams, body []byte) (models.Reply, *failure) {
	actx, cancel := context.WithTimeout(ctx, m.cfg.Timeout)
	defer cancel()
	var (
		raw  []byte
		resp *http.Response
	)
	_, err := m.svc.New(actx, params,
		option.WithRequestBody("application/json", body), // the rendered bytes, as they are
		option.WithResponseBodyInto(&raw),
		option.WithResponseInto(&resp),
	)
	if cerr := ctx.Err(); cerr != nil {
		return models.Reply{}, &failure{ctxErr: cerr}
	}
	if errors.Is(actx.Err(), context.DeadlineExceeded) {
		return models.Reply{}, m.fail(models.ErrTimeout, 0, false,
			fmt.Errorf("no reply within the %s timeout", m.cfg.Timeout), actx.Err())
	}
	if resp == nil {
		if err == nil {
			err = errors.New("no response")
		}
		return models.Reply{}, m.fail(models.ErrUnavailable, 0, true, fmt.Errorf("connection failed: %v", err), err)
	}
	status := resp.StatusCode
	switch {
	case status == http.StatusTooManyRequests || status >= 500:
		kind := models.ErrUnavailable
		if status == http.StatusTooManyRequests {
			kind = models.ErrRateLimited
		}
		f := m.fail(kind, status, true, fmt.Errorf("%s", m.errorMessage(resp)), nil)
		f.err.RetryAfter = m.retryAfter(resp.Header)
		return models.Reply{}, f
	case status >= 400:
		msg, code := m.errorDetail(resp)
		if isContentFilter(code) {
			return models.Reply{}, m.fail(models.ErrRefused, status, false,
				fmt.Errorf("the provider refused the request (%s): %s", code, msg), nil)
		}
		return models.Reply{}, m.fail(models.ErrBadRequest, status, false, fmt.Errorf("%s%s", msg, httpmodel.NotFoundWhere(resp)), nil)
	case status < 200 || status >= 300:
		return models.Reply{}, m.fail(models.ErrBadResponse, status, false,
			fmt.Errorf("unexpected HTTP status %s", resp.Status), nil)
	}
	var tooLarge *httpmodel.ReplyTooLargeError
	if errors.As(err, &tooLarge) {
		// Asking again would get the same answer.
		return models.Reply{}, m.fail(models.ErrBadResponse, status, false, tooLarge, nil)
	}
	if err != nil {
		// A 2xx whose body could not be read: the connection broke.
		return models.Reply{}, m.fail(models.ErrUnavailable, status, true, fmt.Errorf("reading the reply: %v", err), err)
	}
	reply, perr := parseReply(raw, m.redact)
	if perr != nil {
		return models.Reply{}, m.fail(models.ErrBadResponse, status, false, perr, nil)
	}
	if reply.Usage != nil && m.cfg.priced() {
		c := cost(reply.Usage.InputTokens, reply.Usage.OutputTokens, m.cfg.InputPrice, m.cfg.OutputPrice)
		reply.Usage.Cost = &c
	}
	return reply, nil
}

// fail builds a failure whose message is redacted; orig, when given, is
// still matched by errors.Is.
func (m *Model) fail(kind models.ErrorKind, status int, retry bool, err, orig error) *failure {
	if orig == nil {
		orig = err
	}
	return &failure{
		err:   &models.Error{Kind: kind, Provider: Provider, Status: status, Err: &httpmodel.Cause{Msg: m.redact(err.Error()), Orig: orig}},
		retry: retry,
	}
}

// errorMessage is the provider's error message of a failed response.
func (m *Model) errorMessage(resp *http.Response) string {
	msg, _ := m.errorDetail(resp)
	return msg
}

// errorDetail reads the error body: the message (OpenAI's
// {"error":{"message","code"}}, else the start of the body) and the code.
func (m *Model) errorDetail(resp *http.Response) (msg, code string) {
	msg = http.StatusText(resp.StatusCode)
	if resp.Body == nil {
		return msg, ""
	}
	data, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	_ = resp.Body.Close()
	var e struct {
		Error struct {
			Message string `json:"message"`
			Code    any    `json:"code"`
			Type    string `json:"type"`
		} `json:"error"`
	}
	text := strings.TrimSpace(string(data))
	if json.Unmarshal(data, &e) == nil && (e.Error.Message != "" || e.Error.Code != nil) {
		text = e.Error.Message
		if c, ok := e.Error.Code.(string); ok {
			code = c
		}
		if code == "" {
			code = e.Error.Type
		}
	}
	if text != "" {
		msg = text
	}
	return clipTo(m.redact(msg), maxMessage), code // redact first: a clipped key would escape
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

// retryAfter reads Retry-After-Ms (milliseconds) or Retry-After (seconds or
// an HTTP date); 0 when absent or unusable (httpmodel.RetryAfter).
func (m *Model) retryAfter(h http.Header) time.Duration { return httpmodel.RetryAfter(h, m.now()) }

// parseReply maps a Chat Completions response body onto a Reply; redact
// cleans what of the body an error quotes.
func parseReply(raw []byte, redact func(string) string) (models.Reply, error) {
	if !json.Valid(raw) {
		return models.Reply{}, fmt.Errorf("the body is not JSON: %q", clip(redact(string(raw))))
	}
	var c sdk.ChatCompletion
	if err := json.Unmarshal(raw, &c); err != nil {
		return models.Reply{}, fmt.Errorf("the body is not a chat completion: %v", err)
	}
	if len(c.Choices) == 0 {
		var e struct {
			Error struct {
				Message string `json:"message"`
			} `json:"error"`
		}
		if json.Unmarshal(raw, &e) == nil && e.Error.Message != "" {
			return models.Reply{}, fmt.Errorf("no choices; the provider says: %s", clip(redact(e.Error.Message)))
		}
		return models.Reply{}, errors.New("the reply has no choices")
	}
	choice := c.Choices[0]
	if !choice.JSON.Message.Valid() {
		return models.Reply{}, errors.New("the first choice has no message")
	}
	msg := choice.Message
	reply := models.Reply{Text: msg.Content, Model: c.Model}
	for i, tc := range msg.ToolCalls {
		if tc.Type != "" && tc.Type != "function" {
			return models.Reply{}, fmt.Errorf("tool call %d has type %q, not function", i, tc.Type)
		}
		args := tc.Function.Arguments
		if f := tc.Function.JSON.Arguments; !f.Valid() && f.Raw() != "" && f.Raw() != "null" {
			args = f.Raw() // a server that sent an object instead of a string: keep its text
		}
		reply.Calls = append(reply.Calls, models.ToolCall{ID: tc.ID, Name: tc.Function.Name, Args: args})
	}
	if c.JSON.Usage.Valid() && c.Usage.JSON.PromptTokens.Valid() && c.Usage.JSON.CompletionTokens.Valid() {
		if c.Usage.PromptTokens < 0 || c.Usage.CompletionTokens < 0 {
			return models.Reply{}, fmt.Errorf("negative token counts in usage: %d, %d", c.Usage.PromptTokens, c.Usage.CompletionTokens)
		}
		reply.Usage = &models.Usage{InputTokens: uint64(c.Usage.PromptTokens), OutputTokens: uint64(c.Usage.CompletionTokens)}
		// The details are kept only where the provider sent them: many
		// compatible servers send none, and a missing count is unknown.
		if d := c.Usage.PromptTokensDetails; c.Usage.JSON.PromptTokensDetails.Valid() && d.JSON.CachedTokens.Valid() && d.CachedTokens >= 0 {
			n := uint64(d.CachedTokens)
			reply.Usage.CachedInputTokens = &n
		}
		if d := c.Usage.CompletionTokensDetails; c.Usage.JSON.CompletionTokensDetails.Valid() && d.JSON.ReasoningTokens.Valid() && d.ReasoningTokens >= 0 {
			n := uint64(d.ReasoningTokens)
			reply.Usage.ReasoningTokens = &n
		}
	}
	switch fr := choice.FinishReason; {
	case msg.Refusal != "" || fr == "content_filter":
		reply.Finish = models.FinishRefusal
		if reply.Text == "" {
			reply.Text = msg.Refusal
		}
	case fr == "function_call":
		reply.Finish = models.FinishToolCalls
	case fr == "":
		reply.Finish = models.FinishStop
		if len(reply.Calls) > 0 {
			reply.Finish = models.FinishToolCalls
		}
	default:
		reply.Finish = fr // stop, length, tool_calls, or a server's own word
	}
	return reply, nil
}

func clip(s string) string { return clipTo(s, 120) }

// clipTo shortens s to at most n bytes (plus an ellipsis), never cutting a
// character in two.
func clipTo(s string, n int) string { return httpmodel.ClipTo(s, n) }
