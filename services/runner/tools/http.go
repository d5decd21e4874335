package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/factline/factline/events"
)

// HTTPCall POSTs to an endpoint the case allows: an external effect. Each
// call carries its operation ID as the Idempotency-Key header, committed in
// dispatch.intended before the request leaves.
type HTTPCall struct{}

// CodeURLNotAllowed refuses a URL outside the case's allowed prefixes.
const CodeURLNotAllowed = "URL_NOT_ALLOWED"

// CodeHTTPStatus reports an error status from the endpoint.
const CodeHTTPStatus = "HTTP_STATUS"

// Contract implements Tool.
func (HTTPCall) Contract() Contract {
	return Contract{
		Name:        "http_call",
		Description: "POST a JSON body to an endpoint the task allows. This is an effect outside the workspace.",
		Schema: json.RawMessage(`{"type":"object","additionalProperties":false,"required":["url","body"],
"properties":{"url":{"type":"string","minLength":1},"body":{"type":"string","maxLength":65536}}}`),
		Effect: events.EffectExternal, Approval: ApprovalNever, Timeout: 30 * time.Second,
		OutputCap: 4 << 10, Idempotent: false,
	}
}

type httpArgs struct{ URL, Body string }

// Precheck implements Prechecker: a URL the case does not allow is refused
// before the call is intended.
func (HTTPCall) Precheck(env Env, raw json.RawMessage) *Result {
	var a httpArgs
	_ = json.Unmarshal(raw, &a)
	if env.AllowURL == nil || !env.AllowURL(a.URL) {
		res := Fail(CodeURLNotAllowed, "%s is not an endpoint this task may call", a.URL)
		return &res
	}
	return nil
}

// Run implements Tool.
func (HTTPCall) Run(ctx context.Context, env Env, raw json.RawMessage) Result {
	var a httpArgs
	_ = json.Unmarshal(raw, &a)
	if bad := (HTTPCall{}).Precheck(env, raw); bad != nil {
		return *bad
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, a.URL, bytes.NewReader([]byte(a.Body)))
	if err != nil {
		return Fail(CodeBadArguments, "request: %v", err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", env.Operation)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		// The request may or may not have reached the sink.
		return Result{Err: &events.ToolError{Code: CodeIO, Message: fmt.Sprintf("POST %s: %v", a.URL, err), Retryable: true}}
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 8<<10))
	out := fmt.Sprintf("HTTP %d\n%s", resp.StatusCode, body)
	if resp.StatusCode >= 400 {
		return Result{Output: out, Err: &events.ToolError{Code: CodeHTTPStatus, Message: resp.Status, Retryable: resp.StatusCode >= 500}}
	}
	return Result{Output: out}
}
