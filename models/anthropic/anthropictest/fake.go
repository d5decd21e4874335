// Package anthropictest is a wire-level fake of Anthropic's Messages API
// on 127.0.0.1, for tests of anything that speaks it: the anthropic
// provider, and a proxy or agent pointed at an Anthropic base URL. It
// follows the documented shapes: POST /v1/messages with an
// anthropic-version header and a key, a JSON body whose messages are
// user and assistant turns of content blocks, tool_result blocks that
// answer the tool_use blocks of the assistant turn before; a message
// object in reply; errors as {"type":"error","error":{"type","message"}}
// with the documented statuses (400 invalid_request_error, 429
// rate_limit_error with retry-after, 529 overloaded_error). A request
// that breaks the shape is answered 400, as the API would, and recorded.
package anthropictest

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
	Model     string    `json:"model"`
	MaxTokens int64     `json:"max_tokens"`
	Messages  []Message `json:"messages"`
	Tools     []struct {
		Name string `json:"name"`
	} `json:"tools"`
}

// Message is one turn of a request.
type Message struct {
	Role    string  `json:"role"`
	Content []Block `json:"content"`
}

// Block is one content block of a turn.
type Block struct {
	Type      string          `json:"type"`
	Text      string          `json:"text,omitempty"`
	ID        string          `json:"id,omitempty"`
	Name      string          `json:"name,omitempty"`
	Input     json.RawMessage `json:"input,omitempty"`
	ToolUseID string          `json:"tool_use_id,omitempty"`
}

// ToolResults returns the tool_use ids the last user turn answers.
func (r Request) ToolResults() []string {
	var ids []string
	if n := len(r.Messages); n > 0 && r.Messages[n-1].Role == "user" {
		for _, b := range r.Messages[n-1].Content {
			if b.Type == "tool_result" {
				ids = append(ids, b.ToolUseID)
			}
		}
	}
	return ids
}

// Server is the fake. Its methods are safe for concurrent use.
type Server struct {
	// URL is the base URL to configure (ANTHROPIC_BASE_URL's form: no
	// /v1; the fake serves /v1/messages under it).
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
		tb.Fatalf("the fake Messages API is not on loopback: %s", s.srv.URL)
	}
	s.URL = s.srv.URL
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
	if r.Method != http.MethodPost || r.URL.Path != "/v1/messages" {
		write(w, Error(http.StatusNotFound, "not_found_error", fmt.Sprintf("%s %s: no such route", r.Method, r.URL.Path)))
		return
	}
	if r.Header.Get("x-api-key") == "" && !strings.HasPrefix(r.Header.Get("Authorization"), "Bearer ") {
		write(w, Error(http.StatusUnauthorized, "authentication_error", "x-api-key header is required"))
		return
	}
	if r.Header.Get("anthropic-version") == "" {
		write(w, Error(http.StatusBadRequest, "invalid_request_error", "anthropic-version: header is required"))
		return
	}
	req, err := Check(body)
	if err != nil {
		write(w, Error(http.StatusBadRequest, "invalid_request_error", err.Error()))
		return
	}
	write(w, s.respond(n, req))
}

// Check decodes a request body and checks it against the documented
// shape: a model, a positive max_tokens, turns of user and assistant
// (and, in this API version, system) content blocks, and every tool_result
// block answering a tool_use block of the assistant turn just before.
func Check(body []byte) (Request, error) {
	var req Request
	dec := json.NewDecoder(strings.NewReader(string(body)))
	if err := dec.Decode(&req); err != nil {
		return req, fmt.Errorf("the body is not a messages request: %v", err)
	}
	switch {
	case req.Model == "":
		return req, fmt.Errorf("model: Field required")
	case req.MaxTokens <= 0:
		return req, fmt.Errorf("max_tokens: Field required, a positive integer")
	case len(req.Messages) == 0:
		return req, fmt.Errorf("messages: at least one message is required")
	}
	asked := map[string]bool{}
	for i, m := range req.Messages {
		if m.Role != "user" && m.Role != "assistant" && m.Role != "system" {
			return req, fmt.Errorf("messages.%d.role: Input should be 'user' or 'assistant'", i)
		}
		if len(m.Content) == 0 {
			return req, fmt.Errorf("messages.%d: all messages must have non-empty content", i)
		}
		uses := map[string]bool{}
		for j, b := range m.Content {
			switch b.Type {
			case "text":
				if b.Text == "" {
					return req, fmt.Errorf("messages.%d.content.%d.text: text content blocks must be non-empty", i, j)
				}
			case "tool_use":
				if m.Role != "assistant" || b.ID == "" || b.Name == "" || len(b.Input) == 0 || b.Input[0] != '{' {
					return req, fmt.Errorf("messages.%d.content.%d: a tool_use block is an assistant's, with an id, a name and an input object", i, j)
				}
				uses[b.ID] = true
			case "tool_result":
				if m.Role != "user" || !asked[b.ToolUseID] {
					return req, fmt.Errorf("messages.%d.content.%d: unexpected `tool_use_id` found in `tool_result` blocks: %s. Each `tool_result` block must have a corresponding `tool_use` block in the previous message", i, j, b.ToolUseID)
				}
			default:
				return req, fmt.Errorf("messages.%d.content.%d.type: unknown block type %q", i, j, b.Type)
			}
		}
		if m.Role == "assistant" {
			asked = uses
		} else if m.Role == "user" {
			asked = map[string]bool{}
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
	w.Header().Set("request-id", "req_fake")
	status := r.Status
	if status == 0 {
		status = http.StatusOK
	}
	w.WriteHeader(status)
	_, _ = io.WriteString(w, r.Body)
}
