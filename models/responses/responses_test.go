package responses

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/factline/factline/models"
	"github.com/factline/factline/models/responses/responsestest"
)

const testKey = "sk-test-SECRET-responses-0123"

func newModel(t *testing.T, fake *responsestest.Server, cfg Config) (*Model, *[]time.Duration) {
	t.Helper()
	cfg.BaseURL = fake.URL
	if cfg.Model == "" {
		cfg.Model = "gpt-test"
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

func hi() models.Request {
	return models.Request{Messages: []models.Message{{Role: models.RoleUser, Content: "hi"}}}
}

func conversation() models.Request {
	temp := 0.0
	return models.Request{
		Messages: []models.Message{
			{Role: models.RoleSystem, Content: "You are a careful engineer."},
			{Role: models.RoleUser, Content: "Make answer.txt hold 4."},
			{Role: models.RoleAssistant, Content: "Looking first.", ToolCalls: []models.ToolCall{
				{ID: "call_1", Name: "read_file", Args: `{"path": "answer.txt"}`},
				{ID: "call_2", Name: "read_file", Args: `{"path":`}, // malformed: sent as the model gave it
			}},
			{Role: models.RoleTool, ToolCallID: "call_1", Content: "3\n"},
			{Role: models.RoleTool, ToolCallID: "call_2", Content: "bad arguments"},
			{Role: models.RoleUser, Content: "[harness] two reads"},
		},
		Tools: []models.ToolSpec{{Name: "read_file", Description: "Read a file.",
			Parameters: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string","maxLength":4096}},"required":["path"],` +
				`"additionalProperties":false,"if":{"properties":{"path":{"const":"-"}}},"then":{"required":["path"]},"else":{},"minProperties":1}`)}},
		Settings: models.Settings{Model: "gpt-test", MaxOutputTokens: 300, Temperature: &temp, ReasoningEffort: "low"},
	}
}

// The bytes the fake received are the bytes Render returned, for a
// conversation with tools, function calls and their outputs; Render is
// deterministic, stateless (store false) and never holds the key; the fake
// (which checks the documented shape: each function_call_output answers
// an earlier function_call) accepted it.
func TestRenderIsTheSentBody(t *testing.T) {
	fake := responsestest.Start(t, responsestest.Replies(responsestest.Text("gpt-test", "done", responsestest.Usage{InputTokens: 10, OutputTokens: 2})))
	m, _ := newModel(t, fake, Config{})
	req := conversation()
	rendered, err := m.Render(req)
	if err != nil {
		t.Fatal(err)
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
	if err != nil || reply.Text != "done" || reply.Finish != models.FinishStop {
		t.Fatalf("%+v, %v", reply, err)
	}
	if b := fake.Bodies(); len(b) != 1 || !bytes.Equal(b[0], rendered) {
		t.Fatalf("sent body differs from Render:\nsent   %s\nrender %s", b[0], rendered)
	}
	if h := fake.Headers()[0].Get("Authorization"); h != "Bearer "+testKey {
		t.Fatalf("Authorization %q", h)
	}
	var sent struct {
		Store           *bool  `json:"store"`
		MaxOutputTokens int    `json:"max_output_tokens"`
		Instructions    string `json:"instructions"`
		Reasoning       struct {
			Effort string `json:"effort"`
		} `json:"reasoning"`
		Input []responsestest.Item `json:"input"`
		Tools []struct {
			Type, Name string
			Strict     bool
			Parameters json.RawMessage
		} `json:"tools"`
	}
	if err := json.Unmarshal(rendered, &sent); err != nil {
		t.Fatal(err)
	}
	if sent.Store == nil || *sent.Store || sent.MaxOutputTokens != 300 || sent.Reasoning.Effort != "low" {
		t.Fatalf("settings: %s", rendered)
	}
	types := []string{}
	for _, it := range sent.Input {
		types = append(types, it.Type+":"+it.Role)
	}
	if strings.Join(types, " ") != "message:system message:user message:assistant function_call: function_call: function_call_output: function_call_output: message:user" {
		t.Fatalf("input items %v", types)
	}
	if a := *sent.Input[4].Arguments; a != `{"path":` {
		t.Fatalf("malformed arguments sent as %q, want them as the model gave them", a)
	}
	if len(sent.Tools) != 1 || sent.Tools[0].Type != "function" || sent.Tools[0].Strict || !strings.Contains(string(sent.Tools[0].Parameters), `"maxLength":4096`) {
		t.Fatalf("tools %s", rendered)
	}
}

func TestRenderRefusesASeed(t *testing.T) {
	fake := responsestest.Start(t, responsestest.Replies(responsestest.Text("m", "x", responsestest.Usage{})))
	m, _ := newModel(t, fake, Config{})
	seed := int64(7)
	req := hi()
	req.Settings.Seed = &seed
	if _, err := m.Complete(context.Background(), req); models.KindOf(err) != models.ErrBadRequest || !strings.Contains(err.Error(), "seed") {
		t.Fatalf("%v, want bad_request naming the seed", err)
	}
	if len(fake.Bodies()) != 0 {
		t.Fatal("a request that does not render reached the API")
	}
}

// function_call items are calls with their arguments text; the next turn
// sends them back as function_call items with their outputs.
func TestFunctionCalls(t *testing.T) {
	fake := responsestest.Start(t, responsestest.Replies(
		responsestest.Response("gpt-test", "completed", "", responsestest.Usage{InputTokens: 40, OutputTokens: 30, ReasoningTokens: 12},
			responsestest.ReasoningItem(),
			responsestest.FunctionCallItem(responsestest.Call{CallID: "call_a", Name: "write_file", Arguments: `{"path":"answer.txt","content":"4\n"}`}),
			responsestest.FunctionCallItem(responsestest.Call{CallID: "call_b", Name: "run_command", Arguments: `{}`})),
		responsestest.Text("gpt-test", "done", responsestest.Usage{InputTokens: 80, OutputTokens: 3}),
	))
	m, _ := newModel(t, fake, Config{})
	req := hi()
	reply, err := m.Complete(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if reply.Finish != models.FinishToolCalls || len(reply.Calls) != 2 || reply.Calls[0] != (models.ToolCall{ID: "call_a", Name: "write_file", Args: `{"path":"answer.txt","content":"4\n"}`}) ||
		reply.Usage == nil || *reply.Usage.ReasoningTokens != 12 {
		t.Fatalf("reply %+v", reply)
	}
	req.Messages = append(req.Messages, models.Message{Role: models.RoleAssistant, ToolCalls: reply.Calls},
		models.Message{Role: models.RoleTool, ToolCallID: "call_a", Content: "ok"}, models.Message{Role: models.RoleTool, ToolCallID: "call_b", Content: "exit 0"})
	if reply, err = m.Complete(context.Background(), req); err != nil || reply.Text != "done" {
		t.Fatalf("second turn %+v %v", reply, err)
	}
	var sent responsestest.Request
	_ = json.Unmarshal(fake.Bodies()[1], &sent)
	if ids := sent.Outputs(); len(ids) != 2 || ids[0] != "call_a" || ids[1] != "call_b" {
		t.Fatalf("outputs %v", ids)
	}
}

func u64(v uint64) *uint64 { return &v }

func TestUsageAndCost(t *testing.T) {
	fake := responsestest.Start(t, responsestest.Replies(responsestest.Text("gpt-test", "ok", responsestest.Usage{
		InputTokens: 2000, CachedTokens: 1500, CacheWriteTokens: 0, OutputTokens: 100, ReasoningTokens: 40})))
	m, _ := newModel(t, fake, Config{InputPrice: 2_000_000, OutputPrice: 8_000_000, CacheReadPrice: 500_000})
	reply, err := m.Complete(context.Background(), hi())
	if err != nil {
		t.Fatal(err)
	}
	u := reply.Usage
	// 500×2 + 1500×0.5 + 100×8 = 2550
	if u == nil || u.InputTokens != 2000 || *u.CachedInputTokens != 1500 || *u.CacheWriteInputTokens != 0 || u.OutputTokens != 100 ||
		*u.ReasoningTokens != 40 || u.Cost == nil || *u.Cost != 2550 {
		t.Fatalf("usage %+v cost %v", u, u.Cost)
	}
	unpriced, _ := newModel(t, fake, Config{})
	if r, _ := unpriced.Complete(context.Background(), hi()); r.Usage == nil || r.Usage.Cost != nil {
		t.Fatalf("unpriced usage %+v, want tokens and an unknown cost", r.Usage)
	}
}

// An incomplete response at max_output_tokens is the finish "length"; a
// refusal part or a content-filtered response is the finish "refusal";
// none is retried.
func TestStopsAndRefusals(t *testing.T) {
	for _, tc := range []struct {
		reply  responsestest.Reply
		finish string
		text   string
	}{
		{responsestest.MaxOutputTokens("gpt-test", "I was saying", responsestest.Usage{InputTokens: 5, OutputTokens: 300}), models.FinishLength, "I was saying"},
		{responsestest.Refusal("gpt-test", "I can't help with that.", responsestest.Usage{InputTokens: 5, OutputTokens: 6}), models.FinishRefusal, "I can't help with that."},
		{responsestest.ContentFiltered("gpt-test", responsestest.Usage{InputTokens: 5}), models.FinishRefusal, ""},
	} {
		fake := responsestest.Start(t, responsestest.Replies(tc.reply))
		m, _ := newModel(t, fake, Config{})
		reply, err := m.Complete(context.Background(), hi())
		if err != nil || reply.Finish != tc.finish || reply.Text != tc.text || len(fake.Bodies()) != 1 {
			t.Fatalf("reply %+v (%v) after %d calls, want finish %q text %q once", reply, err, len(fake.Bodies()), tc.finish, tc.text)
		}
	}
}

// A 429 waits what retry-after asks and is reported as a throttle; a 503
// is retried; a request a content filter refuses (400, content_filter) is
// ErrRefused and not retried; another 400 is a bad request.
func TestErrors(t *testing.T) {
	fake := responsestest.Start(t, responsestest.Replies(responsestest.RateLimited("2"), responsestest.Overloaded(),
		responsestest.Text("gpt-test", "ok", responsestest.Usage{})))
	m, waits := newModel(t, fake, Config{})
	var throttles []int
	ctx := models.WithThrottleHook(context.Background(), func(th models.Throttle) { throttles = append(throttles, th.Status) })
	if _, err := m.Complete(ctx, hi()); err != nil {
		t.Fatal(err)
	}
	if len(*waits) != 2 || (*waits)[0] != 2*time.Second || len(throttles) != 2 || throttles[0] != 429 || throttles[1] != 503 {
		t.Fatalf("waits %v throttles %v", *waits, throttles)
	}
	for _, tc := range []struct {
		reply responsestest.Reply
		kind  models.ErrorKind
	}{
		{responsestest.Error(400, "invalid_request_error", "content_filter", "flagged"), models.ErrRefused},
		{responsestest.Error(400, "invalid_request_error", "", "Unknown parameter 'x'. "+testKey), models.ErrBadRequest},
	} {
		f := responsestest.Start(t, responsestest.Replies(tc.reply))
		m, _ := newModel(t, f, Config{})
		_, err := m.Complete(context.Background(), hi())
		var me *models.Error
		if !errors.As(err, &me) || me.Kind != tc.kind || me.Attempts != 1 || len(f.Bodies()) != 1 || strings.Contains(err.Error(), testKey) {
			t.Fatalf("%v, want %s after one attempt, without the key", err, tc.kind)
		}
	}
	always := responsestest.Start(t, responsestest.Replies(responsestest.RateLimited("")))
	m, _ = newModel(t, always, Config{MaxRetries: 1})
	if _, err := m.Complete(context.Background(), hi()); models.KindOf(err) != models.ErrRateLimited || len(always.Bodies()) != 2 {
		t.Fatalf("%v after %d calls, want rate_limited after 2", err, len(always.Bodies()))
	}
}

func TestParseReplyRefusesWhatIsNoAnswer(t *testing.T) {
	for body, want := range map[string]string{
		`nope`:                         "not JSON",
		`{"error":{"message":"boom"}}`: "the provider says: boom",
		`{"object":"response","status":"failed","error":{"code":"server_error","message":"oops"},"output":[]}`:                                           "failed (server_error): oops",
		`{"object":"response","status":"in_progress","output":[]}`:                                                                                       "in_progress",
		`{"object":"response","status":"completed"}`:                                                                                                     "no output",
		`{"object":"response","status":"completed","output":[{"type":"function_call","name":"x"}]}`:                                                      "without call_id",
		`{"object":"response","status":"completed","output":[],"usage":{"input_tokens":5,"output_tokens":1,"input_tokens_details":{"cached_tokens":9}}}`: "not a part of 5",
	} {
		if _, err := ParseReply([]byte(body)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseReply(%s): %v, want an error naming %q", body, err, want)
		}
	}
}

func TestNewRefusesABadConfig(t *testing.T) {
	for _, tc := range []struct {
		cfg  Config
		want string
	}{
		{Config{BaseURL: "ftp://x"}, "not an http(s) URL"},
		{Config{BaseURL: "https://api.openai.com/v1"}, "no API key"},
		{Config{BaseURL: "http://127.0.0.1:1/v1", MaxBackoff: -1}, "negative max backoff"},
	} {
		if _, err := New(tc.cfg); models.KindOf(err) != models.ErrConfig || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("New(%v): %v, want config error naming %q", tc.cfg, err, tc.want)
		}
	}
}
