// Package responsestest is a wire-level fake of OpenAI's Responses API on
// 127.0.0.1, for tests of anything that speaks it: the responses
// provider, and a proxy or agent pointed at an OpenAI base URL. It follows
// the documented shapes: POST <base>/responses with a bearer key, a JSON
// body whose input is a list of items (messages of a role,
// function_call items, function_call_output items answering an earlier
// function_call by its call_id); a response object in reply, with its
// status, incomplete_details, output items and usage; errors as
// {"error":{"message","type","code"}} with the documented statuses (400,
// 429 with retry-after, 500, 503). A request that breaks the shape is
// answered 400, as the API would, and recorded.
package responsestest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// Reply is one HTTP answer of the fake.
type Reply struct {
	Status int               // 0: 200
	Header map[string]string // extra headers, e.g. retry-after
	Body   string
}

// Responder chooses the answer to a well-formed request; n counts the
// requests the fake has received, from 1.
type Responder func(n int, req Request) Reply

// Request is the part of a request body a Responder reads.
type Request struct {
	Model string `json:"model"`
	Input []Item `json:"input"`
	Tools []struct {
		Type string `json:"type"`
		Name string `json:"name"`
	} `json:"tools"`
}

// Item is one input item.
type Item struct {
	Type      string          `json:"type"`
	Role      string          `json:"role"`
	Content   json.RawMessage `json:"content"`
	CallID    string          `json:"call_id"`
	Name      string          `json:"name"`
	Arguments *string         `json:"arguments"`
	Output    json.RawMessage `json:"output"`
}

// Outputs returns the call_ids the trailing function_call_output items
// answer.
func (r Request) Outputs() []string {
	var ids []string
	for i := len(r.Input) - 1; i >= 0 && r.Input[i].Type == "function_call_output"; i-- {
		ids = append([]string{r.Input[i].CallID}, ids...)
	}
	return ids
}

// Server is the fake. Its methods are safe for concurrent use.
type Server struct {
	// URL is the base URL to configure (OPENAI_BASE_URL's form: it ends
	// in /v1; the fake serves /v1/responses).
	URL string

	srv     *httptest.Server
	respond Responder

	mu      sync.Mutex
	bodies  [][]byte
	headers []http.Header
}

// Start serves respond on 127.0.0.1 until the test ends.
func Start(tb testing.TB, respond Responder) *Server {
	tb.Helper()
	s := &Server{respond: respond}
	s.srv = httptest.NewServer(http.HandlerFunc(s.handle))
	tb.Cleanup(s.srv.Close)
	if !strings.HasPrefix(s.srv.URL, "http://127.0.0.1:") {
		tb.Fatalf("the fake Responses API is not on loopback: %s", s.srv.URL)
	}
	s.URL = s.srv.URL + "/v1"
	return s
}

// Replies is a Responder that answers the given replies in order, the
// last one again for every later request.
func Replies(rs ...Reply) Responder {
	return func(n int, _ Request) Reply { return rs[min(n, len(rs))-1] }
}

// Bodies returns the request bodies received, in order, as they came.
func (s *Server) Bodies() [][]byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([][]byte(nil), s.bodies...)
}

// Headers returns the request headers received, in order.
func (s *Server) Headers() []http.Header {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]http.Header(nil), s.headers...)
}

func (s *Server) handle(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	s.mu.Lock()
	s.bodies = append(s.bodies, body)
	s.headers = append(s.headers, r.Header.Clone())
	n := len(s.bodies)
	s.mu.Unlock()
	if r.Method != http.MethodPost || r.URL.Path != "/v1/responses" {
		write(w, Error(http.StatusNotFound, "invalid_request_error", "", fmt.Sprintf("Invalid URL (%s %s)", r.Method, r.URL.Path)))
		return
	}
	if !strings.HasPrefix(r.Header.Get("Authorization"), "Bearer ") {
		write(w, Error(http.StatusUnauthorized, "invalid_request_error", "missing_api_key", "You didn't provide an API key."))
		return
	}
	req, err := Check(body)
	if err != nil {
		write(w, Error(http.StatusBadRequest, "invalid_request_error", "", err.Error()))
		return
	}
	write(w, s.respond(n, req))
}

// Check decodes a request body and checks it against the documented
// shape: a model, an input list of messages of a known role with content,
// function_call items with a call_id, a name and arguments text, and
// function_call_output items answering an earlier function_call.
func Check(body []byte) (Request, error) {
	var req Request
	if err := json.Unmarshal(body, &req); err != nil {
		return req, fmt.Errorf("the body is not a responses request: %v", err)
	}
	if req.Model == "" {
		return req, fmt.Errorf("Missing required parameter: 'model'.")
	}
	if len(req.Input) == 0 {
		return req, fmt.Errorf("Missing required parameter: 'input'.")
	}
	calls := map[string]bool{}
	for i, it := range req.Input {
		switch it.Type {
		case "message", "":
			switch it.Role {
			case "user", "assistant", "system", "developer":
			default:
				return req, fmt.Errorf("Invalid value: '%s'. Supported values are: 'assistant', 'system', 'developer', and 'user'. (input[%d].role)", it.Role, i)
			}
			if len(it.Content) == 0 {
				return req, fmt.Errorf("Missing required parameter: 'input[%d].content'.", i)
			}
		case "function_call":
			if it.CallID == "" || it.Name == "" || it.Arguments == nil {
				return req, fmt.Errorf("input[%d]: a function_call needs call_id, name and arguments", i)
			}
			calls[it.CallID] = true
		case "function_call_output":
			if !calls[it.CallID] {
				return req, fmt.Errorf("No tool call found for function call output with call_id %s. (input[%d])", it.CallID, i)
			}
			if len(it.Output) == 0 {
				return req, fmt.Errorf("Missing required parameter: 'input[%d].output'.", i)
			}
		default:
			return req, fmt.Errorf("Invalid value: '%s'. (input[%d].type)", it.Type, i)
		}
	}
	return req, nil
}

func write(w http.ResponseWriter, r Reply) {
	for k, v := range r.Header {
		w.Header().Set(k, v)
	}
	if w.Header().Get("Content-Type") == "" {
		w.Header().Set("Content-Type", "application/json")
	}
	status := r.Status
	if status == 0 {
		status = http.StatusOK
	}
	w.WriteHeader(status)
	_, _ = io.WriteString(w, r.Body)
}
