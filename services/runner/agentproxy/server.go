// Package agentproxy is the model endpoint the runner serves to one
// attempt's external agent: an HTTP server on 127.0.0.1 (a port of its
// own) that speaks three providers' wires (OpenAI Chat Completions,
// OpenAI Responses, Anthropic Messages), refuses every caller without the
// attempt's token, and hands each call to the attempt, which records it as
// a turn and answers through the model port (docs/agents.md). A wire is a
// decoder of the provider's request into models.Request and an encoder of
// models.Reply into its response, on its own path; the recording behind
// every wire is the same.
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
	"sync"
	"sync/atomic"
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
// shape with its status (a budget spent, a run finished), and with
// x-should-retry: false, since no later call will be answered.
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

// DefaultStreamHeadersAfter is how long a streamed call waits for its
// model before the endpoint sends the stream's status and headers
// (SetStreamHeadersAfter).
const DefaultStreamHeadersAfter = time.Second

// KeepAliveEvery is how often an open stream whose model has not yet
// answered is sent an SSE comment line (": keep-alive"), which every SSE
// parser ignores, so that nothing between the agent and the endpoint
// takes the quiet stream for a dead one.
const KeepAliveEvery = 10 * time.Second

// DelayError is a delay setting refused: a negative one.
type DelayError struct {
	// Setting names the setting (StreamHeadersAfter).
	Setting string
	// Value is the delay refused.
	Value time.Duration
}

// Error says which setting was refused and why.
func (e *DelayError) Error() string {
	return fmt.Sprintf("agent proxy: %s %v is negative: give 0 (at once) or a positive delay", e.Setting, e.Value)
}

// Server is one attempt's model endpoint.
type Server struct {
	token string
	model string
	call  Call
	log   *slog.Logger
	ln    net.Listener
	srv   *http.Server
	done  chan struct{}
	// headersAfter is the delay of a stream's headers, in nanoseconds
	// (SetStreamHeadersAfter).
	headersAfter atomic.Int64
	// keepAlive is the interval of an open stream's keep-alive lines, in
	// nanoseconds (KeepAliveEvery; tests shorten it).
	keepAlive atomic.Int64
	// invalid is told of each request refused as invalid (OnInvalid).
	invalid atomic.Pointer[func(error)]
	// items are the Responses message items this endpoint answered, by
	// ID, as input items: what an item_reference names (itemsMu guards).
	itemsMu sync.Mutex
	items   map[string]json.RawMessage
}

// OnInvalid has f told of each request the endpoint refuses as invalid
// (a body too large, or one the wire's provider would refuse: answered
// 400 or 413), before it is answered. The attempt's Call never sees such
// a request, so it is no turn; without f an agent that sent one again and
// again would go unnoticed. f may be called from several requests at
// once.
func (s *Server) OnInvalid(f func(err error)) { s.invalid.Store(&f) }

// SetStreamHeadersAfter sets how long a streamed call may wait for its
// model before the endpoint sends the stream's status (200) and headers
// (DefaultStreamHeadersAfter unless set; 0 sends them at once). A call
// answered, or refused, before then is answered as a whole: its status
// is the refusal's. After then the stream is kept alive with SSE comment
// lines (KeepAliveEvery) while the model works, and the answer follows as
// the wire's events, or a refusal or a model's error as the wire's own
// in-stream error event. A negative delay is refused with a *DelayError.
// It may be set while calls are served; it holds for calls that begin
// after it.
func (s *Server) SetStreamHeadersAfter(d time.Duration) error {
	if d < 0 {
		return &DelayError{Setting: "StreamHeadersAfter", Value: d}
	}
	s.headersAfter.Store(int64(d))
	return nil
}

// refuseInvalid answers a request refused as invalid in the wire's shape,
// after logging it and telling OnInvalid's function.
func (s *Server) refuseInvalid(w http.ResponseWriter, r *http.Request, wr wire, status int, code string, err error) {
	s.log.Warn("agent proxy: request refused", "path", r.URL.Path, "status", status, "err", err)
	if f := s.invalid.Load(); f != nil {
		(*f)(err)
	}
	wr.fail(w, status, "invalid_request_error", code, err.Error())
}

// Start serves call on a fresh 127.0.0.1 port with a fresh token. model is
// the name responses carry (the treatment's model).
func Start(call Call, model string, log *slog.Logger) (*Server, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("agent proxy listen: %w", err)
	}
	s, err := StartOn(ln, call, model, log)
	if err != nil {
		_ = ln.Close()
	}
	return s, err
}

// StartOn is Start on a listener of the caller's: one opened inside an
// attempt's container (sandbox.Sandbox.ListenInside), reachable from
// there alone. Close closes it.
func StartOn(ln net.Listener, call Call, model string, log *slog.Logger) (*Server, error) {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return nil, fmt.Errorf("agent proxy token: %w", err)
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s := &Server{token: "fl-" + hex.EncodeToString(b[:]), model: model, call: call, log: log, ln: ln, done: make(chan struct{})}
	s.headersAfter.Store(int64(DefaultStreamHeadersAfter))
	s.keepAlive.Store(int64(KeepAliveEvery))
	mux := http.NewServeMux()
	mux.HandleFunc("POST "+ChatPath, s.serve(chatWire))
	mux.HandleFunc("POST "+ResponsesPath, s.serve(responsesWire))
	mux.HandleFunc("POST "+MessagesPath, s.serve(messagesWire))
	mux.HandleFunc("POST "+MessagesUnversionedPath, s.serve(messagesWire))
	mux.HandleFunc("GET /v1/models", s.models)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		if !s.authorised(w, r, writeError) {
			return
		}
		writeError(w, http.StatusNotFound, "invalid_request_error", "unknown_url",
			fmt.Sprintf("%s %s is not served here: the endpoint speaks POST %s, %s and %s", r.Method, r.URL.Path, ChatPath, ResponsesPath, MessagesPath))
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
func (s *Server) BaseURL() string { return s.Origin() + "/v1" }

// Origin is the endpoint without a path: Anthropic's clients take it as
// their base URL and add /v1/messages themselves.
func (s *Server) Origin() string { return "http://" + s.ln.Addr().String() }

// Token is the bearer token this endpoint alone accepts.
func (s *Server) Token() string { return s.token }

// Close stops the endpoint: calls in flight are cut off.
func (s *Server) Close() error {
	err := s.srv.Close()
	<-s.done
	return err
}

// errorWriter answers an error in a wire's shape; typ and code are
// OpenAI's names.
type errorWriter func(w http.ResponseWriter, status int, typ, code, msg string)

// authorised answers 401 in the wire's error shape unless the request
// carries this endpoint's token, as a bearer token (OpenAI's clients,
// Anthropic's with an auth token) or in x-api-key (Anthropic's with an
// API key).
func (s *Server) authorised(w http.ResponseWriter, r *http.Request, fail errorWriter) bool {
	got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok {
		// Anthropic's SDKs send the key in x-api-key.
		got = r.Header.Get("X-Api-Key")
	}
	if got != "" && subtle.ConstantTimeCompare([]byte(got), []byte(s.token)) == 1 {
		return true
	}
	fail(w, http.StatusUnauthorized, "invalid_request_error", "invalid_api_key",
		"this endpoint serves one attempt and the key given is not its token")
	return false
}

func (s *Server) models(w http.ResponseWriter, r *http.Request) {
	if !s.authorised(w, r, writeError) {
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"object": "list", "data": []map[string]any{
		{"id": s.model, "object": "model", "created": 0, "owned_by": "factline"}}})
}

// wire is one provider API: how its requests are read, its replies
// written and its errors shaped.
type wire struct {
	// decode reads a request body: the port's request, whether a stream
	// is asked for, and for Chat Completions whether its usage is.
	decode func(body []byte) (req models.Request, stream, includeUsage bool, err error)
	// idPrefix begins the ID of each answer, as the API's own IDs do.
	idPrefix string
	// whole encodes the answer to a reply as one JSON body, stream as
	// server-sent events (with the usage when asked for).
	whole  func(id, model string, created int64, r models.Reply) ([]byte, error)
	stream func(id, model string, created int64, r models.Reply, includeUsage bool) ([]Event, error)
	fail   errorWriter
	// streamFail is an error as the wire sends it inside a stream whose
	// status (200) has gone: the event the provider sends and its SDK
	// reads as an error.
	streamFail func(status int, typ, code, msg string) Event
	// keepsItems marks the Responses wire: the endpoint remembers the
	// message items it answered, and resolves an item_reference to one.
	keepsItems bool
}

var chatWire = wire{
	decode: func(body []byte) (models.Request, bool, bool, error) {
		in, err := DecodeChat(body)
		return in.Request, in.Stream, in.IncludeUsage, err
	},
	idPrefix: "chatcmpl-",
	whole:    EncodeChat,
	stream: func(id, model string, created int64, r models.Reply, includeUsage bool) ([]Event, error) {
		chunks, err := EncodeChatStream(id, model, created, r, includeUsage)
		if err != nil {
			return nil, err
		}
		events := make([]Event, 0, len(chunks)+1)
		for _, c := range chunks {
			events = append(events, Event{Data: c})
		}
		return append(events, Event{Data: []byte("[DONE]")}), nil
	},
	fail: writeError,
	// openai-node's and openai-go's stream decoders throw on a chunk
	// holding an error object.
	streamFail: func(_ int, typ, code, msg string) Event {
		return marshalEvent("", map[string]any{"error": map[string]any{"message": msg, "type": typ, "code": code, "param": nil}})
	},
}

var responsesWire = wire{
	decode:     withoutUsage(DecodeResponses),
	keepsItems: true,
	idPrefix:   "resp_",
	whole:      EncodeResponses,
	stream: func(id, model string, created int64, r models.Reply, _ bool) ([]Event, error) {
		return EncodeResponsesStream(id, model, created, r)
	},
	fail: writeError,
	// openai-node's ResponseErrorEvent; no response.created has gone,
	// so there is no response to send as response.failed.
	streamFail: func(_ int, _, code, msg string) Event {
		return marshalEvent("error", map[string]any{"type": "error", "code": code, "message": msg, "param": nil, "sequence_number": 0})
	},
}

var messagesWire = wire{
	decode:   withoutUsage(DecodeMessages),
	idPrefix: "msg_",
	whole: func(id, model string, _ int64, r models.Reply) ([]byte, error) {
		return EncodeMessages(id, model, r)
	},
	stream: func(id, model string, _ int64, r models.Reply, _ bool) ([]Event, error) {
		return EncodeMessagesStream(id, model, r)
	},
	fail: writeAnthropicError,
	// The Messages API's error event, which @anthropic-ai/sdk and
	// anthropic-sdk-go turn into an APIError.
	streamFail: func(status int, _, code, msg string) Event {
		return marshalEvent("error", map[string]any{"type": "error",
			"error": map[string]any{"type": anthropicErrorType(status), "message": code + ": " + msg}})
	},
}

// marshalEvent is the event name whose data is fields as JSON (which
// cannot fail for the maps of strings the wires' errors are).
func marshalEvent(name string, fields map[string]any) Event {
	b, err := json.Marshal(fields)
	if err != nil {
		b = []byte(`{"error":{"message":"the error cannot be encoded"}}`)
	}
	return Event{Name: name, Data: b}
}

// withoutUsage is the decode of an API whose streams have no option to
// include the usage (only Chat Completions has one).
func withoutUsage(decode func(body []byte) (models.Request, bool, error)) func(body []byte) (models.Request, bool, bool, error) {
	return func(body []byte) (models.Request, bool, bool, error) {
		req, stream, err := decode(body)
		return req, stream, false, err
	}
}

// reply writes the answer to a reply, whole or as events, and returns the
// answer's ID. Nothing is written unless the answer was encoded whole.
func (wr wire) reply(w http.ResponseWriter, model string, r models.Reply, stream, includeUsage bool) (string, error) {
	now := time.Now()
	id, created := fmt.Sprintf("%s%d", wr.idPrefix, now.UnixNano()), now.Unix()
	if !stream {
		body, err := wr.whole(id, model, created, r)
		if err != nil {
			return id, err
		}
		writeJSON(w, body)
		return id, nil
	}
	events, err := wr.stream(id, model, created, r, includeUsage)
	if err != nil {
		return id, err
	}
	writeEvents(w, events)
	return id, nil
}

// serve is the handler of one wire: authorise, read the request, hand it
// to the attempt, answer the reply or the refusal in the wire's shapes.
func (s *Server) serve(wr wire) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if !s.authorised(w, r, wr.fail) {
			return
		}
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxRequestBytes))
		if err != nil {
			s.refuseInvalid(w, r, wr, http.StatusRequestEntityTooLarge, "request_too_large", fmt.Errorf("request body: %w", err))
			return
		}
		if wr.keepsItems {
			if body, err = s.resolveItemReferences(body); err != nil {
				s.refuseInvalid(w, r, wr, http.StatusBadRequest, "invalid_request", err)
				return
			}
		}
		req, stream, includeUsage, err := wr.decode(body)
		if err != nil {
			s.refuseInvalid(w, r, wr, http.StatusBadRequest, "invalid_request", err)
			return
		}
		var reply models.Reply
		open := false // the stream's status and headers have gone
		if stream {
			reply, open, err = s.awaitStream(w, r, req)
		} else {
			reply, err = s.call(r.Context(), req)
		}
		fail := func(status int, typ, code, msg string) {
			if open {
				// The status has gone: the error is the stream's last
				// event.
				writeEvent(w, wr.streamFail(status, typ, code, msg))
				return
			}
			wr.fail(w, status, typ, code, msg)
		}
		if err != nil {
			var ref *Refusal
			if errors.As(err, &ref) {
				// A refusal is the run's end: no later call is answered.
				// The openai and Anthropic clients retry 409 and 429 unless
				// told not to, and obey this header (which an open stream
				// can no longer send).
				w.Header().Set("X-Should-Retry", "false")
				fail(ref.Status, ref.Type, ref.Code, ref.Message)
				return
			}
			s.log.Warn("agent proxy: call failed", "err", err)
			fail(http.StatusBadGateway, "server_error", "model_error", err.Error())
			return
		}
		if r.Context().Err() != nil {
			// The agent hung up while its model answered: its client gave
			// up (an SDK's timeout shorter than the model's latency) and
			// will likely send the call again, a new turn, counted again.
			// The turn is recorded with a reply the agent never read.
			s.log.Warn("agent proxy: the agent hung up before its answer; the turn is recorded, and a retry of the call is a new turn (is its client's timeout shorter than the model takes?)",
				"path", r.URL.Path, "err", context.Cause(r.Context()))
		}
		model := reply.Model
		if model == "" {
			model = s.model
		}
		id, err := wr.reply(w, model, reply, stream, includeUsage)
		if err == nil && wr.keepsItems {
			s.rememberItems(id, reply)
		}
		if err != nil {
			// Nothing of the reply is written before it is encoded whole.
			fail(http.StatusBadGateway, "server_error", "encode", fmt.Sprintf("the model's reply cannot be sent on this wire: %v", err))
		}
	}
}

// awaitStream asks the attempt's call for a streamed request. If the
// call ends within the delay (SetStreamHeadersAfter) nothing is written
// and open is false: the answer is written whole, as a non-streamed one.
// Otherwise the stream's status (200) and headers are sent at the delay,
// as a provider sends them at once (the openai and Anthropic node clients
// stop their timeout at the headers), and SSE comment lines keep it alive
// every KeepAliveEvery until the call ends; open is then true.
func (s *Server) awaitStream(w http.ResponseWriter, r *http.Request, req models.Request) (reply models.Reply, open bool, err error) {
	type result struct {
		reply models.Reply
		err   error
	}
	done := make(chan result, 1)
	go func() {
		var res result
		defer func() {
			if p := recover(); p != nil {
				res = result{err: fmt.Errorf("the attempt's call panicked: %v", p)}
			}
			done <- res
		}()
		res.reply, res.err = s.call(r.Context(), req)
	}()
	if delay := time.Duration(s.headersAfter.Load()); delay > 0 {
		t := time.NewTimer(delay)
		select {
		case res := <-done:
			t.Stop()
			return res.reply, false, res.err
		case <-t.C:
		}
	}
	rc := http.NewResponseController(w)
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	// A client gone is found when the call ends (r.Context()): what is
	// written to it meanwhile is lost, as is the error of writing it.
	_ = rc.Flush()
	tick := time.NewTicker(time.Duration(s.keepAlive.Load()))
	defer tick.Stop()
	for {
		select {
		case res := <-done:
			return res.reply, true, res.err
		case <-tick.C:
			_, _ = io.WriteString(w, ": keep-alive\n\n")
			_ = rc.Flush()
		}
	}
}

// writeJSON answers a JSON body.
func writeJSON(w http.ResponseWriter, body []byte) {
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(body)
}

// writeEvents answers server-sent events, each with its name when it has
// one.
func writeEvents(w http.ResponseWriter, events []Event) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	for _, e := range events {
		writeEvent(w, e)
	}
}

// writeEvent writes one server-sent event, with its name when it has one.
func writeEvent(w http.ResponseWriter, e Event) {
	if e.Name != "" {
		_, _ = fmt.Fprintf(w, "event: %s\n", e.Name)
	}
	_, _ = fmt.Fprintf(w, "data: %s\n\n", e.Data)
}

// writeError answers in OpenAI's error shape.
func writeError(w http.ResponseWriter, status int, typ, code, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{"message": msg, "type": typ, "code": code, "param": nil}})
}
