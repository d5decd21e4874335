package anthropic

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/factline/factline/models"
	"github.com/factline/factline/models/anthropic/anthropictest"
)

const testKey = "sk-ant-test-SECRET-0123456789"

// newModel returns a Model for the fake whose waits are recorded, not slept.
func newModel(t *testing.T, fake *anthropictest.Server, cfg Config) (*Model, *[]time.Duration) {
	t.Helper()
	cfg.BaseURL = fake.URL
	if cfg.Model == "" {
		cfg.Model = "claude-test"
	}
	if cfg.APIKey == "" {
		cfg.APIKey = testKey
	}
	m, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	var mu sync.Mutex
	waits := &[]time.Duration{}
	m.retry.Sleep = func(ctx context.Context, d time.Duration) error {
		mu.Lock()
		defer mu.Unlock()
		*waits = append(*waits, d)
		return ctx.Err()
	}
	m.retry.Jitter = func() float64 { return 0 }
	return m, waits
}

// readSchema has several keywords beyond properties and required, as the
// runner's task_complete has: their order once varied from render to
// render.
func readSchema() json.RawMessage {
	return json.RawMessage(`{"type":"object","properties":{"path":{"type":"string","maxLength":4096}},"required":["path"],"additionalProperties":false,` +
		`"if":{"properties":{"path":{"const":"-"}}},"then":{"required":["path"]},"else":{},"$comment":"x","minProperties":1}`)
}

// conversation is a run's context after one tool turn: system, user, an
// assistant turn with text and two calls, their two results, and harness
// feedback.
func conversation() models.Request {
	return models.Request{
		Messages: []models.Message{
			{Role: models.RoleSystem, Content: "You are a careful engineer."},
			{Role: models.RoleUser, Content: "Make answer.txt hold 4."},
			{Role: models.RoleAssistant, Content: "Looking first.", ToolCalls: []models.ToolCall{
				{ID: "toolu_1", Name: "read_file", Args: `{"path":"answer.txt"}`},
				{ID: "toolu_2", Name: "read_file", Args: `{"path": "check.sh"}`},
			}},
			{Role: models.RoleTool, ToolCallID: "toolu_1", Content: "3\n"},
			{Role: models.RoleTool, ToolCallID: "toolu_2", Content: ""},
			{Role: models.RoleUser, Content: "[harness] two reads, no change yet"},
		},
		Tools:    []models.ToolSpec{{Name: "read_file", Description: "Read a file.", Parameters: readSchema()}},
		Settings: models.Settings{Model: "claude-test", MaxOutputTokens: 512, ReasoningEffort: "low"},
	}
}

// The bytes the fake received are the bytes Render returned, for a
// conversation with tools, tool calls and tool results; Render is
// deterministic and never holds the key; the fake (which checks the
// documented shape: tool_result blocks answering the tool_use blocks of
// the turn before) accepted it.
func TestRenderIsTheSentBody(t *testing.T) {
	fake := anthropictest.Start(t, anthropictest.Replies(anthropictest.Text("claude-test", "done", anthropictest.Usage{InputTokens: 10, OutputTokens: 2})))
	m, _ := newModel(t, fake, Config{})
	req := conversation()
	rendered, err := m.Render(req)
	if err != nil {
		t.Fatalf("Render: %v", err)
	}
	for range 50 {
		if again, _ := m.Render(req); !bytes.Equal(rendered, again) {
			t.Fatalf("Render is not deterministic:\n%s\n%s", rendered, again)
		}
	}
	if bytes.Contains(rendered, []byte(testKey)) {
		t.Fatal("Render's output holds the API key")
	}
	reply, err := m.Complete(context.Background(), req)
	if err != nil {
		t.Fatalf("Complete: %v", err)
	}
	if reply.Text != "done" || reply.Finish != models.FinishStop {
		t.Fatalf("reply %+v", reply)
	}
	bodies := fake.Bodies()
	if len(bodies) != 1 || !bytes.Equal(bodies[0], rendered) {
		t.Fatalf("sent body differs from Render:\nsent   %s\nrender %s", bodies[0], rendered)
	}
	h := fake.Headers()[0]
	if !strings.Contains(h.Get("Authorization")+h.Get("x-api-key"), testKey) || h.Get("anthropic-version") == "" {
		t.Fatalf("headers carry no key or no version: %v", h)
	}
}

// The rendered request is the Messages API's shape: the system prompt on
// top, the tool results of one turn in one user turn (with the harness's
// feedback after them), each call's arguments as its input object, the
// schema as input_schema, max_tokens and the effort.
func TestRenderMapping(t *testing.T) {
	fake := anthropictest.Start(t, anthropictest.Replies(anthropictest.Text("m", "x", anthropictest.Usage{})))
	m, _ := newModel(t, fake, Config{})
	body, err := m.Render(conversation())
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Model     string            `json:"model"`
		MaxTokens int               `json:"max_tokens"`
		System    []json.RawMessage `json:"system"`
		Messages  []struct {
			Role    string            `json:"role"`
			Content []json.RawMessage `json:"content"`
		} `json:"messages"`
		Tools        []map[string]json.RawMessage `json:"tools"`
		OutputConfig struct {
			Effort string `json:"effort"`
		} `json:"output_config"`
	}
	if err := json.Unmarshal(body, &got); err != nil {
		t.Fatal(err)
	}
	if got.Model != "claude-test" || got.MaxTokens != 512 || got.OutputConfig.Effort != "low" || len(got.System) != 1 {
		t.Fatalf("settings: %s", body)
	}
	roles := []string{}
	for _, msg := range got.Messages {
		roles = append(roles, msg.Role)
	}
	if strings.Join(roles, ",") != "user,assistant,user" {
		t.Fatalf("roles %v, want user,assistant,user: %s", roles, body)
	}
	assistant := string(got.Messages[1].Content[1])
	if !strings.Contains(assistant, `"input":{"path":"answer.txt"}`) || !strings.Contains(assistant, `"type":"tool_use"`) {
		t.Fatalf("tool_use block %s", assistant)
	}
	results := got.Messages[2].Content
	if len(results) != 3 || !strings.Contains(string(results[0]), `"tool_use_id":"toolu_1"`) ||
		!strings.Contains(string(results[1]), `"tool_use_id":"toolu_2"`) || !strings.Contains(string(results[2]), "[harness]") {
		t.Fatalf("the second user turn: %s", body)
	}
	if s := string(got.Tools[0]["input_schema"]); !strings.Contains(s, `"maxLength":4096`) || !strings.Contains(s, `"required":["path"]`) ||
		!strings.Contains(s, `"additionalProperties":false`) {
		t.Fatalf("input_schema %s", s)
	}
}

func TestRenderRefusesWhatTheAPICannotCarry(t *testing.T) {
	fake := anthropictest.Start(t, anthropictest.Replies(anthropictest.Text("m", "x", anthropictest.Usage{})))
	m, _ := newModel(t, fake, Config{})
	zero, seed := 0.0, int64(1)
	for name, tc := range map[string]struct {
		mutate func(*models.Request)
		kind   models.ErrorKind
		msg    string
	}{
		"temperature":    {func(r *models.Request) { r.Settings.Temperature = &zero }, models.ErrBadRequest, "temperature"},
		"top_p":          {func(r *models.Request) { r.Settings.TopP = &zero }, models.ErrBadRequest, "top_p"},
		"seed":           {func(r *models.Request) { r.Settings.Seed = &seed }, models.ErrBadRequest, "seed"},
		"effort":         {func(r *models.Request) { r.Settings.ReasoningEffort = "minimal" }, models.ErrBadRequest, "reasoning effort"},
		"args":           {func(r *models.Request) { r.Messages[2].ToolCalls[0].Args = `{"path":` }, models.ErrBadRequest, "message 2: tool call toolu_1"},
		"schema":         {func(r *models.Request) { r.Tools[0].Parameters = json.RawMessage(`[1]`) }, models.ErrBadRequest, "tool 0 (read_file)"},
		"role":           {func(r *models.Request) { r.Messages[1].Role = "critic" }, models.ErrBadRequest, `unknown role "critic"`},
		"no model":       {func(r *models.Request) { r.Settings.Model = ""; m.cfg.Model = "" }, models.ErrConfig, "no model"},
		"schema is list": {func(r *models.Request) { r.Tools[0].Parameters = json.RawMessage(`{"type":"array"}`) }, models.ErrBadRequest, "an input schema is an object"},
	} {
		t.Run(name, func(t *testing.T) {
			defer func() { m.cfg.Model = "claude-test" }()
			req := conversation()
			tc.mutate(&req)
			_, err := m.Render(req)
			if models.KindOf(err) != tc.kind || !strings.Contains(err.Error(), tc.msg) {
				t.Fatalf("Render: %v, want %s naming %q", err, tc.kind, tc.msg)
			}
			if _, err := m.Complete(context.Background(), req); models.KindOf(err) != tc.kind {
				t.Fatalf("Complete: %v, want %s without a call", err, tc.kind)
			}
		})
	}
	if n := len(fake.Bodies()); n != 0 {
		t.Fatalf("%d requests reached the API; a request that does not render is never sent", n)
	}
}

// A tool_use reply is calls with their input objects as arguments, and a
// second turn sends them back as tool_use blocks the fake accepts with
// their results.
func TestToolUse(t *testing.T) {
	fake := anthropictest.Start(t, anthropictest.Replies(
		anthropictest.ToolUse("claude-test", anthropictest.Usage{InputTokens: 50, OutputTokens: 20},
			anthropictest.Call{ID: "toolu_a", Name: "write_file", Input: `{"path":"answer.txt","content":"4\n"}`},
			anthropictest.Call{ID: "toolu_b", Name: "run_command", Input: `{}`}),
		anthropictest.Text("claude-test", "done", anthropictest.Usage{InputTokens: 80, OutputTokens: 3}),
	))
	m, _ := newModel(t, fake, Config{})
	req := models.Request{Messages: []models.Message{{Role: models.RoleUser, Content: "fix it"}}}
	reply, err := m.Complete(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	want := []models.ToolCall{{ID: "toolu_a", Name: "write_file", Args: `{"path":"answer.txt","content":"4\n"}`}, {ID: "toolu_b", Name: "run_command", Args: `{}`}}
	if reply.Finish != models.FinishToolCalls || len(reply.Calls) != 2 || reply.Calls[0] != want[0] || reply.Calls[1] != want[1] {
		t.Fatalf("reply %+v, want calls %+v", reply, want)
	}
	req.Messages = append(req.Messages, models.Message{Role: models.RoleAssistant, ToolCalls: reply.Calls},
		models.Message{Role: models.RoleTool, ToolCallID: "toolu_a", Content: "wrote 2 bytes"},
		models.Message{Role: models.RoleTool, ToolCallID: "toolu_b", Content: "exit 0"})
	if reply, err = m.Complete(context.Background(), req); err != nil || reply.Text != "done" {
		t.Fatalf("second turn: %+v, %v", reply, err)
	}
	var sent anthropictest.Request
	if err := json.Unmarshal(fake.Bodies()[1], &sent); err != nil {
		t.Fatal(err)
	}
	if ids := sent.ToolResults(); len(ids) != 2 || ids[0] != "toolu_a" || ids[1] != "toolu_b" {
		t.Fatalf("tool results %v", ids)
	}
}

func u64(v uint64) *uint64 { return &v }

// Usage is the whole input (uncached, read from and written to the prompt
// cache) with the reads and writes as its named parts, the output with its
// thinking tokens, priced per kind.
func TestUsageAndCost(t *testing.T) {
	fake := anthropictest.Start(t, anthropictest.Replies(anthropictest.Text("claude-test", "ok", anthropictest.Usage{
		InputTokens: 100, OutputTokens: 50, CacheReadInputTokens: 1000, CacheCreationInputTokens: 200, ThinkingTokens: 30})))
	for _, tc := range []struct {
		name string
		cfg  Config
		cost *uint64
	}{
		// 100×3 + 1000×1 + 200×4 + 50×15 = 2850 per million → 1 (rounded up)
		{"priced", Config{InputPrice: 3_000_000, OutputPrice: 15_000_000, CacheReadPrice: 300_000, CacheWritePrice: 3_750_000}, u64(300 + 300 + 750 + 750)},
		{"no write price", Config{InputPrice: 3_000_000, OutputPrice: 15_000_000}, nil},
		{"unpriced", Config{}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, _ := newModel(t, fake, tc.cfg)
			reply, err := m.Complete(context.Background(), models.Request{Messages: []models.Message{{Role: models.RoleUser, Content: "hi"}}})
			if err != nil {
				t.Fatal(err)
			}
			u := reply.Usage
			if u == nil || u.InputTokens != 1300 || u.OutputTokens != 50 || *u.CachedInputTokens != 1000 || *u.CacheWriteInputTokens != 200 || *u.ReasoningTokens != 30 {
				t.Fatalf("usage %+v", u)
			}
			if (u.Cost == nil) != (tc.cost == nil) || (u.Cost != nil && *u.Cost != *tc.cost) {
				t.Fatalf("cost %v, want %v", ptrText(u.Cost), ptrText(tc.cost))
			}
		})
	}
}

func ptrText(p *uint64) string {
	if p == nil {
		return "unknown"
	}
	return strconv.FormatUint(*p, 10)
}

// stop_reason max_tokens is the finish "length", with the partial text; a
// refusal is the finish "refusal" (the run ends for review); neither is
// retried.
func TestStopReasons(t *testing.T) {
	for _, tc := range []struct {
		reply  anthropictest.Reply
		finish string
		text   string
	}{
		{anthropictest.MaxTokens("claude-test", "I was saying", anthropictest.Usage{InputTokens: 5, OutputTokens: 512}), models.FinishLength, "I was saying"},
		{anthropictest.Refusal("claude-test", "", anthropictest.Usage{InputTokens: 5, OutputTokens: 1}), models.FinishRefusal, ""},
		{anthropictest.Answer("claude-test", "model_context_window_exceeded", anthropictest.Usage{}, anthropictest.TextBlock("cut")), models.FinishLength, "cut"},
		{anthropictest.Answer("claude-test", "stop_sequence", anthropictest.Usage{}, anthropictest.TextBlock("end")), models.FinishStop, "end"},
	} {
		fake := anthropictest.Start(t, anthropictest.Replies(tc.reply))
		m, _ := newModel(t, fake, Config{})
		reply, err := m.Complete(context.Background(), models.Request{Messages: []models.Message{{Role: models.RoleUser, Content: "hi"}}})
		if err != nil || reply.Finish != tc.finish || reply.Text != tc.text {
			t.Fatalf("reply %+v (%v), want finish %q text %q", reply, err, tc.finish, tc.text)
		}
		if n := len(fake.Bodies()); n != 1 {
			t.Fatalf("%d calls for a %s reply, want 1", n, tc.finish)
		}
	}
}

// 529 overloaded_error is retried, each attempt reported as a throttle
// (status 529) to the fleet's limiter, and succeeds once the API recovers.
func TestOverloadedIsRetriedAndReportedAsAThrottle(t *testing.T) {
	fake := anthropictest.Start(t, anthropictest.Replies(anthropictest.Overloaded(), anthropictest.Overloaded(),
		anthropictest.Text("claude-test", "ok", anthropictest.Usage{InputTokens: 1, OutputTokens: 1})))
	m, waits := newModel(t, fake, Config{})
	var throttles []models.Throttle
	ctx := models.WithThrottleHook(context.Background(), func(th models.Throttle) { throttles = append(throttles, th) })
	reply, err := m.Complete(ctx, models.Request{Messages: []models.Message{{Role: models.RoleUser, Content: "hi"}}})
	if err != nil || reply.Text != "ok" {
		t.Fatalf("%+v, %v", reply, err)
	}
	if len(throttles) != 2 || throttles[0].Status != 529 || len(*waits) != 2 {
		t.Fatalf("throttles %+v, waits %v: want two 529s, two waits", throttles, *waits)
	}
	bodies := fake.Bodies()
	if !bytes.Equal(bodies[0], bodies[2]) {
		t.Fatal("a retry sent another body")
	}
}

// An API that stays overloaded ends the call unavailable with the status,
// the API's error type and the attempts made.
func TestOverloadedOutlastingTheRetries(t *testing.T) {
	fake := anthropictest.Start(t, anthropictest.Replies(anthropictest.Overloaded()))
	m, _ := newModel(t, fake, Config{MaxRetries: 2})
	_, err := m.Complete(context.Background(), models.Request{Messages: []models.Message{{Role: models.RoleUser, Content: "hi"}}})
	var me *models.Error
	if !errors.As(err, &me) || me.Kind != models.ErrUnavailable || me.Status != 529 || me.Attempts != 3 || !strings.Contains(err.Error(), "overloaded_error") {
		t.Fatalf("error %v, want unavailable (HTTP 529) after 3 attempts naming overloaded_error", err)
	}
}

// A 429 waits what retry-after asks; a 429 asking for more than the cap
// ends the call rate limited at once.
func TestRateLimitedWaitsRetryAfter(t *testing.T) {
	fake := anthropictest.Start(t, anthropictest.Replies(anthropictest.RateLimited("3"), anthropictest.Text("claude-test", "ok", anthropictest.Usage{})))
	m, waits := newModel(t, fake, Config{})
	if _, err := m.Complete(context.Background(), models.Request{Messages: []models.Message{{Role: models.RoleUser, Content: "hi"}}}); err != nil {
		t.Fatal(err)
	}
	if len(*waits) != 1 || (*waits)[0] != 3*time.Second {
		t.Fatalf("waits %v, want the 3s retry-after", *waits)
	}
	slow := anthropictest.Start(t, anthropictest.Replies(anthropictest.RateLimited("120")))
	m, waits = newModel(t, slow, Config{MaxBackoff: 10 * time.Second})
	_, err := m.Complete(context.Background(), models.Request{Messages: []models.Message{{Role: models.RoleUser, Content: "hi"}}})
	var me *models.Error
	if !errors.As(err, &me) || me.Kind != models.ErrRateLimited || me.RetryAfter != 120*time.Second || len(*waits) != 0 || len(slow.Bodies()) != 1 {
		t.Fatalf("error %v, waits %v: want rate_limited at once, asking 2m0s", err, *waits)
	}
}

// A 400 is a bad request, never retried, with the API's message; the key
// never appears in an error even when the API echoes it.
func TestBadRequestIsNotRetriedAndNeverShowsTheKey(t *testing.T) {
	fake := anthropictest.Start(t, anthropictest.Replies(anthropictest.Error(400, "invalid_request_error", "bad key "+testKey)))
	m, _ := newModel(t, fake, Config{})
	_, err := m.Complete(context.Background(), models.Request{Messages: []models.Message{{Role: models.RoleUser, Content: "hi"}}})
	if models.KindOf(err) != models.ErrBadRequest || len(fake.Bodies()) != 1 || !strings.Contains(err.Error(), "invalid_request_error") {
		t.Fatalf("error %v after %d calls, want one bad_request", err, len(fake.Bodies()))
	}
	if strings.Contains(err.Error(), testKey) {
		t.Fatalf("the key leaked: %v", err)
	}
}

// A request the fake finds malformed (a tool result answering no call)
// comes back as the API's 400, so a provider that renders a wrong shape
// fails its tests against the fake.
func TestTheFakeRefusesAToolResultWithoutItsCall(t *testing.T) {
	fake := anthropictest.Start(t, anthropictest.Replies(anthropictest.Text("m", "x", anthropictest.Usage{})))
	m, _ := newModel(t, fake, Config{})
	_, err := m.Complete(context.Background(), models.Request{Messages: []models.Message{
		{Role: models.RoleUser, Content: "hi"}, {Role: models.RoleTool, ToolCallID: "toolu_x", Content: "?"}}})
	if models.KindOf(err) != models.ErrBadRequest || !strings.Contains(err.Error(), "toolu_x") {
		t.Fatalf("error %v, want the fake's 400 naming toolu_x", err)
	}
}

func TestParseReplyRefusesWhatIsNoMessage(t *testing.T) {
	for body, want := range map[string]string{
		`not json`: "not JSON",
		`{"type":"error","error":{"type":"api_error","message":"boom"}}`: "the provider says: boom",
		`{"type":"message","content":[{"type":"tool_use","input":{}}]}`:  "without id or name",
		`{"type":"message"}`: "no content",
		`{"type":"message","content":[],"usage":{"input_tokens":-1,"output_tokens":0}}`:                                              "negative",
		`{"type":"message","content":[],"usage":{"input_tokens":1,"output_tokens":2,"output_tokens_details":{"thinking_tokens":3}}}`: "not a part of output_tokens 2",
	} {
		if _, err := ParseReply([]byte(body)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseReply(%s): %v, want an error naming %q", body, err, want)
		}
	}
}

func TestNewRefusesABadConfig(t *testing.T) {
	for cfg, want := range map[*Config]string{
		{BaseURL: "ftp://x"}:                           "not an http(s) URL",
		{BaseURL: "https://u:p@api.anthropic.com"}:     "credentials",
		{BaseURL: "https://api.anthropic.com"}:         "no API key",
		{BaseURL: "http://127.0.0.1:1", Timeout: -1}:   "negative timeout",
		{BaseURL: "http://127.0.0.1:1", MaxTokens: -1}: "negative max tokens",
	} {
		if _, err := New(*cfg); models.KindOf(err) != models.ErrConfig || !strings.Contains(err.Error(), want) {
			t.Errorf("New(%v): %v, want config error naming %q", cfg, err, want)
		}
	}
}

// Reserve bounds a call by its rendered size at the dearest input price
// and its max_tokens of output.
func TestReserve(t *testing.T) {
	fake := anthropictest.Start(t, anthropictest.Replies(anthropictest.Text("m", "x", anthropictest.Usage{})))
	m, _ := newModel(t, fake, Config{InputPrice: 1_000_000, OutputPrice: 2_000_000, CacheWritePrice: 3_000_000})
	req := conversation()
	body, _ := m.Render(req)
	want := (uint64(len(body))+3)/4*3 + 512*2
	if got := m.Reserve(req); got != want {
		t.Fatalf("Reserve %d, want %d", got, want)
	}
	unpriced, _ := newModel(t, fake, Config{})
	if got := unpriced.Reserve(req); got != 0 {
		t.Fatalf("Reserve %d unpriced, want 0", got)
	}
}

// A 404 names the URL that was not found (a base URL with a stray /v1
// posts to …/v1/v1/messages), as the openai provider's does.
func TestA404NamesTheURLItPosted(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "404 page not found", http.StatusNotFound)
	}))
	defer srv.Close()
	m, err := New(Config{BaseURL: srv.URL + "/v1", Model: "m", APIKey: testKey})
	if err != nil {
		t.Fatal(err)
	}
	_, err = m.Complete(context.Background(), models.Request{Messages: []models.Message{{Role: models.RoleUser, Content: "hi"}}})
	if models.KindOf(err) != models.ErrBadRequest {
		t.Fatalf("got %v, want bad_request", err)
	}
	for _, want := range []string{"404 page not found", "POST " + srv.URL + "/v1/v1/messages", "base URL"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%v: does not say %q", err, want)
		}
	}
}

// A tool_use whose input is not a JSON object (the API always sends one; a
// proxy translating another model may not) is a bad_response of the reply
// that carries it. It used to be taken, run as a bad call, and then make
// the next turn's request unrenderable: the run ended errored as a harness
// error ("render request: … arguments are not a JSON object").
func TestAToolUseInputThatIsNoObjectIsABadResponse(t *testing.T) {
	for _, input := range []string{`"{\"command\": \"ls\"}"`, `[1,2]`, `3`} {
		body := `{"type":"message","model":"m","content":[{"type":"tool_use","id":"tu1","name":"run_command","input":` + input + `}],` +
			`"stop_reason":"tool_use","usage":{"input_tokens":1,"output_tokens":1}}`
		_, err := ParseReply([]byte(body))
		if err == nil || !strings.Contains(err.Error(), "content block 0") || !strings.Contains(err.Error(), "not a JSON object") {
			t.Errorf("input %s: %v, want an error naming the block and what is wrong", input, err)
		}
	}
	ok := `{"type":"message","model":"m","content":[{"type":"tool_use","id":"tu1","name":"x","input":{"a":1}}],"stop_reason":"tool_use","usage":{"input_tokens":1,"output_tokens":1}}`
	if r, err := ParseReply([]byte(ok)); err != nil || len(r.Calls) != 1 || r.Calls[0].Args != `{"a":1}` {
		t.Fatalf("an object input: %+v, %v", r, err)
	}
}
