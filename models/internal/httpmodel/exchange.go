package httpmodel

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/factline/factline/models"
)

// maxErrorBody bounds how much of an error body is read for its message.
const maxErrorBody = 64 << 10

// MaxMessage bounds the provider's message quoted in an error.
const MaxMessage = 300

// Exchange is the outcome of one SDK call, as the provider saw it.
type Exchange struct {
	// Ctx is the caller's context, Attempt the attempt's (Ctx with the
	// per-attempt Timeout).
	Ctx, Attempt context.Context
	Timeout      time.Duration
	// Resp is the HTTP response the SDK received (nil: none), Err what
	// the SDK returned.
	Resp *http.Response
	Err  error
}

// Errors is how a provider reads and words its failures.
type Errors struct {
	Provider string
	// Redact removes the API key from a text.
	Redact func(string) string
	// Now is the clock for HTTP-date Retry-After values.
	Now func() time.Time
	// Detail reads the provider's error body: its message and its error
	// code or type ("" when none).
	Detail func(body []byte) (msg, code string)
	// Refusal reports whether an error code of a 4xx answer says the
	// request itself was refused by a safety filter.
	Refusal func(code string) bool
}

// Check maps an exchange that did not end in a usable 2xx answer onto a
// failure: the caller's ctx ending, the attempt's timeout, a connection
// that failed, 429 (ErrRateLimited) and 5xx or 529 (ErrUnavailable), both
// retried with the Retry-After they carry, other 4xx (ErrBadRequest, or
// ErrRefused for a content-filter code), any other status
// (ErrBadResponse). It returns nil for a 2xx whose body was read.
func (e Errors) Check(x Exchange) *Failure {
	if cerr := x.Ctx.Err(); cerr != nil {
		return &Failure{CtxErr: cerr}
	}
	if errors.Is(x.Attempt.Err(), context.DeadlineExceeded) {
		return e.Fail(models.ErrTimeout, 0, false, fmt.Errorf("no reply within the %s timeout", x.Timeout), x.Attempt.Err())
	}
	if x.Resp == nil {
		err := x.Err
		if err == nil {
			err = errors.New("no response")
		}
		return e.Fail(models.ErrUnavailable, 0, true, fmt.Errorf("connection failed: %v", err), err)
	}
	status := x.Resp.StatusCode
	switch {
	case status == http.StatusTooManyRequests || status >= 500:
		kind := models.ErrUnavailable
		if status == http.StatusTooManyRequests {
			kind = models.ErrRateLimited
		}
		msg, code := e.detail(x.Resp)
		if code != "" && !strings.Contains(msg, code) {
			msg = code + ": " + msg
		}
		f := e.Fail(kind, status, true, errors.New(msg), nil)
		f.Err.RetryAfter = RetryAfter(x.Resp.Header, e.Now())
		return f
	case status >= 400:
		msg, code := e.detail(x.Resp)
		if e.Refusal != nil && e.Refusal(code) {
			return e.Fail(models.ErrRefused, status, false, fmt.Errorf("the provider refused the request (%s): %s", code, msg), nil)
		}
		if code != "" && !strings.Contains(msg, code) {
			msg = code + ": " + msg
		}
		return e.Fail(models.ErrBadRequest, status, false, errors.New(msg+NotFoundWhere(x.Resp)), nil)
	case status < 200 || status >= 300:
		return e.Fail(models.ErrBadResponse, status, false, fmt.Errorf("unexpected HTTP status %s", x.Resp.Status), nil)
	}
	var tooLarge *ReplyTooLargeError
	if errors.As(x.Err, &tooLarge) {
		// Asking again would get the same answer.
		return e.Fail(models.ErrBadResponse, status, false, tooLarge, nil)
	}
	if x.Err != nil {
		// A 2xx whose body could not be read: the connection broke.
		return e.Fail(models.ErrUnavailable, status, true, fmt.Errorf("reading the reply: %v", x.Err), x.Err)
	}
	return nil
}

// NotFoundWhere is what a 404 adds to its error: the URL that was not
// found. Local servers answer a wrong route with a bare "404 page not
// found", and a base URL without its API root (or with one too many) is
// the usual cause, which only the URL shows. "" for any other answer.
func NotFoundWhere(resp *http.Response) string {
	if resp == nil || resp.StatusCode != http.StatusNotFound || resp.Request == nil || resp.Request.URL == nil {
		return ""
	}
	return fmt.Sprintf(" (%s %s was not found: check the base URL, the API root the provider's path is appended to, and the model name)",
		resp.Request.Method, resp.Request.URL.Redacted())
}

// Fail builds a failure whose message is redacted; orig, when given, is
// still matched by errors.Is.
func (e Errors) Fail(kind models.ErrorKind, status int, retry bool, err, orig error) *Failure {
	if orig == nil {
		orig = err
	}
	return &Failure{
		Err:   &models.Error{Kind: kind, Provider: e.Provider, Status: status, Err: &Cause{Msg: e.Redact(err.Error()), Orig: orig}},
		Retry: retry,
	}
}

// detail reads an error body: the provider's message (else the start of
// the body, else the status text) and its code, redacted and clipped.
func (e Errors) detail(resp *http.Response) (msg, code string) {
	msg = http.StatusText(resp.StatusCode)
	if resp.Body == nil {
		return msg, ""
	}
	data, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	_ = resp.Body.Close()
	text := strings.TrimSpace(string(data))
	if m, c := e.Detail(data); m != "" || c != "" {
		text, code = m, c
	}
	if text != "" {
		msg = text
	}
	// Redact first: a clipped key would escape.
	return ClipTo(e.Redact(msg), MaxMessage), ClipTo(e.Redact(code), MaxMessage)
}

// Redactor returns a function that removes key from a text.
func Redactor(key string) func(string) string {
	return func(s string) string {
		if key == "" {
			return s
		}
		return strings.ReplaceAll(s, key, "[redacted]")
	}
}

// ClipTo shortens s to at most n bytes (plus an ellipsis), never cutting a
// character in two.
func ClipTo(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n], "") + "…"
}
