// Package agentproxy is the model endpoint the runner serves to one
// attempt's external agent: an HTTP server on 127.0.0.1 (a port of its
// own) that speaks a provider's wire (OpenAI Chat Completions today),
// refuses every caller without the attempt's bearer token, and hands each
// call to the attempt, which records it as a turn and answers through the
// model port (docs/agents.md). A wire is a decoder of the provider's
// request into models.Request and an encoder of models.Reply into its
// response; another wire (OpenAI Responses, Anthropic Messages) is another
// handler on its own path.
package agentproxy

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/factline/factline/models"
)

// MaxRequestBytes bounds a request body: a coding agent's context is
// large, but not without end.
const MaxRequestBytes = 32 << 20

// Call answers one decoded model call of the agent. It is the attempt's:
// it records the turn and asks the model. A *Refusal it returns is
// answered with its status; any other error with 502.
type Call func(ctx context.Context, req models.Request) (models.Reply, error)

// Refusal is a call the attempt refuses, answered in the wire's error
// shape with its status (a budget spent, a run finished).
type Refusal struct {
	// Status is the HTTP status.
	Status int
	// Type and Code are the error's type and code as the wire names them
	// (OpenAI: "insufficient_quota", "invalid_request_error").
	Type, Code string
	// Message says what happened, for the agent's user.
	Message string
}

// Error returns the refusal's message.
func (r *Refusal) Error() string { return fmt.Sprintf("%s: %s", r.Code, r.Message) }

// Server is one attempt's model endpoint.
type Server struct {
	token string
	model string
	call  Call
	log   *slog.Logger
	ln    net.Listener
	srv   *http.Server
	done  chan struct{}
}

// Start serves call on a fresh 127.0.0.1 port with a fresh token. model is
// the name responses carry (the treatment's model).
func Start(call Call, model string, log *slog.Logger) (*Server, error) {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return nil, fmt.Errorf("agent proxy token: %w", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("agent proxy listen: %w", err)
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s := &Server{token: "fl-" + hex.EncodeToString(b[:]), model: model, call: call, log: log, ln: ln, done: make(chan struct{})}
	mux := http.NewServeMux()
	mux.HandleFunc("POST "+ChatPath, s.chat)
	mux.HandleFunc("GET /v1/models", s.models)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		if !s.authorised(w, r) {
			return
		}
		writeError(w, http.StatusNotFound, "invalid_request_error", "unknown_url",
			fmt.Sprintf("%s %s is not served here: the endpoint speaks POST %s", r.Method, r.URL.Path, ChatPath))
	})
	s.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		defer close(s.done)
		if err := s.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Warn("agent proxy stopped", "err", err)
		}
	}()
	return s, nil
}

// BaseURL is the endpoint's base for OpenAI wires (ending in /v1).
func (s *Server) BaseURL() string { return "http://" + s.ln.Addr().String() + "/v1" }

// Token is the bearer token this endpoint alone accepts.
func (s *Server) Token() string { return s.token }

// Close stops the endpoint: calls in flight are cut off.
func (s *Server) Close() error {
	err := s.srv.Close()
	<-s.done
	return err
}

// authorised answers 401 unless the request carries this endpoint's token.
func (s *Server) authorised(w http.ResponseWriter, r *http.Request) bool {
	got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok {
		// Anthropic's SDKs send the key in x-api-key.
		got = r.Header.Get("X-Api-Key")
	}
	if got != "" && subtle.ConstantTimeCompare([]byte(got), []byte(s.token)) == 1 {
		return true
	}
	writeError(w, http.StatusUnauthorized, "invalid_request_error", "invalid_api_key",
		"this endpoint serves one attempt and the key given is not its token")
	return false
}

func (s *Server) models(w http.ResponseWriter, r *http.Request) {
	if !s.authorised(w, r) {
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"object": "list", "data": []map[string]any{
		{"id": s.model, "object": "model", "created": 0, "owned_by": "factline"}}})
}

func (s *Server) chat(w http.ResponseWriter, r *http.Request) {
	if !s.authorised(w, r) {
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxRequestBytes))
	if err != nil {
		writeError(w, http.StatusRequestEntityTooLarge, "invalid_request_error", "request_too_large", fmt.Sprintf("request body: %v", err))
		return
	}
	in, err := DecodeChat(body)
	if err != nil {
		writeError(w, http.StatusBadRequest, "invalid_request_error", "invalid_request", err.Error())
		return
	}
	reply, err := s.call(r.Context(), in.Request)
	if err != nil {
		var ref *Refusal
		if errors.As(err, &ref) {
			writeError(w, ref.Status, ref.Type, ref.Code, ref.Message)
			return
		}
		s.log.Warn("agent proxy: call failed", "err", err)
		writeError(w, http.StatusBadGateway, "server_error", "model_error", err.Error())
		return
	}
	id := fmt.Sprintf("chatcmpl-%d", time.Now().UnixNano())
	model := reply.Model
	if model == "" {
		model = s.model
	}
	created := time.Now().Unix()
	if !in.Stream {
		out, err := EncodeChat(id, model, created, reply)
		if err != nil {
			writeError(w, http.StatusInternalServerError, "server_error", "encode", err.Error())
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(out)
		return
	}
	chunks, err := EncodeChatStream(id, model, created, reply, in.IncludeUsage)
	if err != nil {
		writeError(w, http.StatusInternalServerError, "server_error", "encode", err.Error())
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	for _, c := range chunks {
		_, _ = fmt.Fprintf(w, "data: %s\n\n", c)
	}
	_, _ = io.WriteString(w, "data: [DONE]\n\n")
}

// writeError answers in OpenAI's error shape.
func writeError(w http.ResponseWriter, status int, typ, code, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{"message": msg, "type": typ, "code": code, "param": nil}})
}
