package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptrace"
	"strings"
	"sync/atomic"
	"time"

	"github.com/factline/factline/cases/httpallow"
	"github.com/factline/factline/events"
)

// HTTPCall POSTs to an endpoint the case allows: an external effect. Each
// call carries its operation ID as the Idempotency-Key header, committed in
// dispatch.intended before the request leaves.
type HTTPCall struct {
	// Timeout bounds one call (0: DefaultHTTPTimeout).
	Timeout time.Duration
}

// DefaultHTTPTimeout bounds an http_call whose case sets no timeout.
const DefaultHTTPTimeout = 30 * time.Second

// CodeURLNotAllowed refuses a URL that no entry of the case's http.allow
// covers, or that is ambiguous (userinfo, a percent-encoded host, a dot
// segment).
const CodeURLNotAllowed = "URL_NOT_ALLOWED"

// CodeHTTPStatus reports an error status from the endpoint.
const CodeHTTPStatus = "HTTP_STATUS"

// CodeHTTPRedirect reports a redirect that says the endpoint did not act
// on the request (300, 301, 307, 308). Redirects are never followed.
const CodeHTTPRedirect = "HTTP_REDIRECT"

// CodeOutcomeUnknown settles an external call whose answer was lost after
// the request may have reached the sink, when nothing could establish
// what it did. It is never retryable: sending it again could double it.
const CodeOutcomeUnknown = "OUTCOME_UNKNOWN"

// Contract implements Tool.
func (h HTTPCall) Contract() Contract {
	timeout := h.Timeout
	if timeout <= 0 {
		timeout = DefaultHTTPTimeout
	}
	return Contract{
		Name:        "http_call",
		Description: "POST a JSON body to an endpoint the task allows. This is an effect outside the workspace.",
		Schema: json.RawMessage(`{"type":"object","additionalProperties":false,"required":["url","body"],
"properties":{"url":{"type":"string","minLength":1},"body":{"type":"string","maxLength":65536}}}`),
		Effect: events.EffectExternal, Approval: ApprovalNever, Timeout: timeout,
		OutputCap: httpOutputCap, Idempotent: false,
	}
}

type httpArgs struct{ URL, Body string }

// httpOutputCap is the most of an answer the model reads.
const httpOutputCap = 4 << 10

// httpCountCap bounds how much of an answer without a Content-Length is
// read only to be counted, so that a sink streaming without end is not
// read until the call's timeout at full speed.
const httpCountCap = 64 << 20

// readAnswer reads the start of an answer's body, what the model may be
// shown of it, and counts the rest: the whole body's length, exactly
// when the answer declared it or ended within httpCountCap, otherwise at
// least that many bytes (exact false).
func readAnswer(resp *http.Response) (body []byte, total int64, exact bool) {
	body, _ = io.ReadAll(io.LimitReader(resp.Body, httpOutputCap+1))
	if len(body) <= httpOutputCap {
		return body, int64(len(body)), true
	}
	if resp.ContentLength >= 0 {
		return body, resp.ContentLength, true
	}
	rest, err := io.Copy(io.Discard, io.LimitReader(resp.Body, httpCountCap))
	return body, int64(len(body)) + rest, err == nil && rest < httpCountCap
}

// answerOutput is what the model reads of an answer: head (the status
// line and any Location) and the body, cut at the output cap with a mark
// that counts the bytes of the whole answer not shown.
func answerOutput(head string, body []byte, total int64, exact bool) (string, bool) {
	s := head + string(body)
	whole := int64(len(head)) + total
	if whole <= httpOutputCap {
		return s, false
	}
	out := capKnown(s, httpOutputCap, whole)
	if !exact {
		out = strings.Replace(out, "\n[output cut: ", "\n[output cut: at least ", 1)
	}
	return out, true
}

// Precheck implements Prechecker: a URL the case does not allow is refused
// before the call is intended.
func (HTTPCall) Precheck(env Env, raw json.RawMessage) *Result {
	var a httpArgs
	_ = json.Unmarshal(raw, &a)
	why := errors.New("the task allows no endpoint")
	if env.AllowURL != nil {
		why = env.AllowURL(a.URL)
	}
	if why != nil {
		// The refusal's own text begins with the URL as well: once is
		// enough.
		reason := why.Error()
		var refused *httpallow.Error
		if errors.As(why, &refused) {
			reason = refused.Reason
		}
		res := Fail(CodeURLNotAllowed, "%s is not an endpoint this task may call: %s", a.URL, reason)
		return &res
	}
	return nil
}

// effectClient sends external effects. Keep-alive is off so that every
// call has a connection of its own: net/http resends a request that
// carries an Idempotency-Key when a reused connection fails, and a sink
// that does not deduplicate would then apply it twice without anyone
// having decided to send it again. It follows no redirect: the allowlist
// checked the URL the call names, and a redirect would carry the body
// and the Idempotency-Key to a host nobody checked.
var effectClient = &http.Client{
	Transport: &http.Transport{
		Proxy:             http.ProxyFromEnvironment,
		DisableKeepAlives: true,
	},
	CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
}

// Run implements Tool. The result's Outcome says what the sink did as far
// as its answer shows: applied (2xx), not_applied (the request never left,
// the sink refused it with a 4xx, or redirected it elsewhere without
// acting: 300, 301, 307, 308) or unknown (the answer was lost after a
// connection to the sink was open, the sink failed with a 5xx, or it
// answered with another redirect, such as the 302 or 303 a server sends
// after acting on a POST).
func (HTTPCall) Run(ctx context.Context, env Env, raw json.RawMessage) Result {
	var a httpArgs
	_ = json.Unmarshal(raw, &a)
	if bad := (HTTPCall{}).Precheck(env, raw); bad != nil {
		bad.Outcome = events.OutcomeNotApplied
		return *bad
	}
	// Once a connection is open the request may reach the sink, whatever
	// happens to its answer.
	var connected atomic.Bool
	ctx = httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{GotConn: func(httptrace.GotConnInfo) { connected.Store(true) }})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, a.URL, bytes.NewReader([]byte(a.Body)))
	if err != nil {
		res := Fail(CodeBadArguments, "request: %v", err)
		res.Outcome = events.OutcomeNotApplied
		return res
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", env.Operation)
	resp, err := effectClient.Do(req)
	if err != nil {
		if !connected.Load() {
			return Result{Outcome: events.OutcomeNotApplied, Err: &events.ToolError{Code: CodeIO,
				Message: fmt.Sprintf("POST %s: %v (the request never reached the endpoint)", a.URL, err), Retryable: true}}
		}
		return Result{Outcome: events.OutcomeUnknown, Err: &events.ToolError{Code: CodeOutcomeUnknown,
			Message: fmt.Sprintf("POST %s: %s after the request was sent: it may or may not have taken effect", a.URL, lostAnswer(ctx, err))}}
	}
	defer resp.Body.Close()
	body, total, exact := readAnswer(resp)
	if resp.StatusCode >= 300 && resp.StatusCode < 400 {
		return redirected(a.URL, resp, body, total, exact)
	}
	out, cut := answerOutput(fmt.Sprintf("HTTP %d\n", resp.StatusCode), body, total, exact)
	switch {
	case resp.StatusCode >= 500 && resp.StatusCode != http.StatusNotImplemented && resp.StatusCode != http.StatusHTTPVersionNotSupported:
		// The sink failed while handling the request: it may have done part
		// or all of it.
		return Result{Output: out, Truncated: cut, Outcome: events.OutcomeUnknown, Err: &events.ToolError{Code: CodeOutcomeUnknown,
			Message: fmt.Sprintf("POST %s: the endpoint failed (%s): it may or may not have taken effect", a.URL, resp.Status)}}
	case resp.StatusCode >= 400:
		return Result{Output: out, Truncated: cut, Outcome: events.OutcomeNotApplied, Err: &events.ToolError{Code: CodeHTTPStatus, Message: resp.Status}}
	}
	return Result{Output: out, Truncated: cut, Outcome: events.OutcomeApplied}
}

// redirected settles a call the endpoint answered with a redirect, which
// is not followed. The output records the status and the Location. A
// redirect that sends the request elsewhere says this endpoint did not
// act on it: not applied. Any other 3xx (302 and 303 above all, which
// servers send after acting on a POST to point at its result) may follow
// an effect: unknown, for the runner to reconcile.
func redirected(url string, resp *http.Response, body []byte, total int64, exact bool) Result {
	loc := resp.Header.Get("Location")
	out, cut := answerOutput(fmt.Sprintf("HTTP %d\nLocation: %s\n", resp.StatusCode, loc), body, total, exact)
	switch resp.StatusCode {
	case http.StatusMultipleChoices, http.StatusMovedPermanently, http.StatusTemporaryRedirect, http.StatusPermanentRedirect:
		return Result{Output: out, Truncated: cut, Outcome: events.OutcomeNotApplied, Err: &events.ToolError{Code: CodeHTTPRedirect,
			Message: fmt.Sprintf("POST %s: the endpoint answered %s to %q without acting on it; redirects are not followed", url, resp.Status, loc)}}
	}
	return Result{Output: out, Truncated: cut, Outcome: events.OutcomeUnknown, Err: &events.ToolError{Code: CodeOutcomeUnknown,
		Message: fmt.Sprintf("POST %s: the endpoint answered %s to %q, which may follow an effect; redirects are not followed: it may or may not have taken effect", url, resp.Status, loc)}}
}

// lostAnswer names how an answer was lost.
func lostAnswer(ctx context.Context, err error) string {
	switch {
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		return "no answer in time"
	case errors.Is(ctx.Err(), context.Canceled):
		return "the call was cancelled while in flight"
	}
	return fmt.Sprintf("the answer was lost (%v)", err)
}
