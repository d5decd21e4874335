// Package clients_test tests the endpoint's wires with the providers'
// official clients (openai-go, anthropic-sdk-go) against the real server
// on 127.0.0.1. It is a package of its own so that fuzzing agentproxy's
// decoders does not instrument those large SDKs.
package clients_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	anthropic "github.com/anthropics/anthropic-sdk-go/v2"
	aoption "github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/openai/openai-go/v3"
	ooption "github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/param"
	"github.com/openai/openai-go/v3/responses"

	"github.com/factline/factline/models"
	"github.com/factline/factline/services/runner/agentproxy"
)

// recorder is a Call that keeps the requests it was handed and answers
// each with the next reply.
type recorder struct {
	mu      sync.Mutex
	reqs    []models.Request
	replies []models.Reply
}

func (r *recorder) call(_ context.Context, req models.Request) (models.Reply, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.reqs = append(r.reqs, req)
	if len(r.replies) == 0 {
		return models.Reply{}, errors.New("no reply left")
	}
	reply := r.replies[0]
	r.replies = r.replies[1:]
	return reply, nil
}

func u64(n uint64) *uint64 { return &n }

func start(t *testing.T, call agentproxy.Call) *agentproxy.Server {
	t.Helper()
	s, err := agentproxy.Start(call, "scripted-model", nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// callReply is a reply calling one tool, with usage including cache reads.
var callReply = models.Reply{Calls: []models.ToolCall{{ID: "call_1", Name: "exec_command", Args: `{"cmd":"ls"}`}},
	Usage: &models.Usage{InputTokens: 120, OutputTokens: 9, CachedInputTokens: u64(20)}}

var textReply = models.Reply{Text: "all done", Finish: models.FinishStop, Usage: &models.Usage{InputTokens: 130, OutputTokens: 4}}

func responsesSvc(s *agentproxy.Server, token string) *responses.ResponseService {
	c := openai.NewClient(ooption.WithBaseURL(s.BaseURL()), ooption.WithAPIKey(token), ooption.WithMaxRetries(0))
	return &c.Responses
}

// responsesParams is a conversation in the Responses API's items: the
// instructions, a user message, the model's call and its output.
func responsesParams() responses.ResponseNewParams {
	return responses.ResponseNewParams{
		Model:        "gpt-whatever",
		Instructions: openai.String("be brief"),
		Input: responses.ResponseNewParamsInputUnion{OfInputItemList: responses.ResponseInputParam{
			responses.ResponseInputItemParamOfMessage("list the files", responses.EasyInputMessageRoleUser),
			responses.ResponseInputItemParamOfFunctionCall(`{"cmd":"ls"}`, "call_0", "exec_command"),
			output("call_0", "a.txt"),
		}},
		Tools: []responses.ToolUnionParam{responses.ToolParamOfFunction("exec_command",
			map[string]any{"type": "object", "properties": map[string]any{"cmd": map[string]any{"type": "string"}}}, false)},
	}
}

func output(callID, text string) responses.ResponseInputItemUnionParam {
	out := responses.ResponseInputItemParamOfFunctionCallOutput(text)
	out.OfFunctionCallOutput.CallID = param.NewOpt(callID)
	return out
}

// wantConversation checks the port's request read from either wire's
// conversation: system, user, the assistant's call, the tool's output, and
// the one tool.
func wantConversation(t *testing.T, req models.Request) {
	t.Helper()
	want := []models.Message{
		{Role: models.RoleSystem, Content: "be brief"},
		{Role: models.RoleUser, Content: "list the files"},
		{Role: models.RoleAssistant, ToolCalls: []models.ToolCall{{ID: "call_0", Name: "exec_command", Args: `{"cmd":"ls"}`}}},
		{Role: models.RoleTool, Content: "a.txt", ToolCallID: "call_0"},
	}
	got, _ := json.Marshal(req.Messages)
	exp, _ := json.Marshal(want)
	if string(got) != string(exp) {
		t.Errorf("messages\n got %s\nwant %s", got, exp)
	}
	if len(req.Tools) != 1 || req.Tools[0].Name != "exec_command" || !strings.Contains(string(req.Tools[0].Parameters), `"cmd"`) {
		t.Errorf("tools %+v, want exec_command with its schema", req.Tools)
	}
}

// The official openai-go Responses client, not streaming, gets the model's
// call as a function_call item with its call_id, and its usage; the
// request it sent reached the attempt as the port's request.
func TestResponsesWireAnswersTheOpenAIClient(t *testing.T) {
	rec := &recorder{replies: []models.Reply{callReply, textReply}}
	s := start(t, rec.call)
	c := responsesSvc(s, s.Token())
	resp, err := c.New(context.Background(), responsesParams())
	if err != nil {
		t.Fatal(err)
	}
	wantConversation(t, rec.reqs[0])
	if resp.Status != "completed" || len(resp.Output) != 1 {
		t.Fatalf("response %s", resp.RawJSON())
	}
	fc := resp.Output[0].AsFunctionCall()
	if fc.CallID != "call_1" || fc.Name != "exec_command" || fc.Arguments != `{"cmd":"ls"}` {
		t.Errorf("function call %+v", fc)
	}
	if resp.Usage.InputTokens != 120 || resp.Usage.OutputTokens != 9 || resp.Usage.InputTokensDetails.CachedTokens != 20 {
		t.Errorf("usage %s", resp.Usage.RawJSON())
	}
	resp, err = c.New(context.Background(), responses.ResponseNewParams{Model: "x",
		Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("hi")}})
	if err != nil {
		t.Fatal(err)
	}
	if resp.OutputText() != "all done" {
		t.Errorf("text %q, want all done", resp.OutputText())
	}
	if m := rec.reqs[1].Messages; len(m) != 1 || m[0].Role != models.RoleUser || m[0].Content != "hi" {
		t.Errorf("a string input is one user message: %+v", m)
	}
}

// The same client streaming gets the events the API sends, each in turn,
// ending with response.completed that carries the whole response.
func TestResponsesWireStreamsToTheOpenAIClient(t *testing.T) {
	reply := callReply
	reply.Text = "listing"
	rec := &recorder{replies: []models.Reply{reply}}
	s := start(t, rec.call)
	c := responsesSvc(s, s.Token())
	stream := c.NewStreaming(context.Background(), responsesParams())
	var types []string
	var text, args string
	var final responses.Response
	for stream.Next() {
		ev := stream.Current()
		types = append(types, ev.Type)
		switch ev.Type {
		case "response.output_text.delta":
			text += ev.Delta
		case "response.function_call_arguments.done":
			args = ev.Arguments
		case "response.completed":
			final = ev.Response
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	wantConversation(t, rec.reqs[0])
	if types[0] != "response.created" || types[len(types)-1] != "response.completed" {
		t.Errorf("events %v: want response.created first, response.completed last", types)
	}
	if text != "listing" || args != `{"cmd":"ls"}` {
		t.Errorf("streamed text %q, arguments %q", text, args)
	}
	if len(final.Output) != 2 || final.OutputText() != "listing" || final.Output[1].AsFunctionCall().CallID != "call_1" || final.Usage.OutputTokens != 9 {
		t.Errorf("completed response %s", final.RawJSON())
	}
}

func anthropicMessages(s *agentproxy.Server, key string) *anthropic.MessageService {
	c := anthropic.NewClient(aoption.WithBaseURL(s.Origin()), aoption.WithAPIKey(key), aoption.WithMaxRetries(0))
	return &c.Messages
}

// messagesParams is the conversation in the Messages API's blocks.
func messagesParams() anthropic.MessageNewParams {
	return anthropic.MessageNewParams{
		Model:     "claude-whatever",
		MaxTokens: 1000,
		System:    []anthropic.TextBlockParam{{Text: "be brief"}},
		Messages: []anthropic.MessageParam{
			anthropic.NewUserMessage(anthropic.NewTextBlock("list the files")),
			anthropic.NewAssistantMessage(anthropic.NewToolUseBlock("call_0", map[string]any{"cmd": "ls"}, "exec_command")),
			anthropic.NewUserMessage(anthropic.NewToolResultBlock("call_0", "a.txt", false)),
		},
		Tools: []anthropic.ToolUnionParam{{OfTool: &anthropic.ToolParam{Name: "exec_command",
			InputSchema: anthropic.ToolInputSchemaParam{Properties: map[string]any{"cmd": map[string]any{"type": "string"}}}}}},
	}
}

// The official Anthropic Go SDK, not streaming, gets the model's call as a
// tool_use block, the stop reason tool_use and the usage, cache reads apart
// from input tokens as the API counts them.
func TestMessagesWireAnswersTheAnthropicClient(t *testing.T) {
	rec := &recorder{replies: []models.Reply{callReply}}
	s := start(t, rec.call)
	msg, err := anthropicMessages(s, s.Token()).New(context.Background(), messagesParams())
	if err != nil {
		t.Fatal(err)
	}
	wantConversation(t, rec.reqs[0])
	if msg.StopReason != anthropic.StopReasonToolUse || len(msg.Content) != 1 {
		t.Fatalf("message %s", msg.RawJSON())
	}
	tu := msg.Content[0].AsToolUse()
	if tu.ID != "call_1" || tu.Name != "exec_command" || string(tu.Input) != `{"cmd":"ls"}` {
		t.Errorf("tool_use %s", tu.RawJSON())
	}
	if msg.Usage.InputTokens != 100 || msg.Usage.CacheReadInputTokens != 20 || msg.Usage.OutputTokens != 9 {
		t.Errorf("usage %s", msg.Usage.RawJSON())
	}
}

// Streaming, the SDK's accumulator builds the same message from the
// events, text then the call, with the stop reason and output usage.
func TestMessagesWireStreamsToTheAnthropicClient(t *testing.T) {
	reply := callReply
	reply.Text = "listing"
	rec := &recorder{replies: []models.Reply{reply}}
	s := start(t, rec.call)
	stream := anthropicMessages(s, s.Token()).NewStreaming(context.Background(), messagesParams())
	var msg anthropic.Message
	for stream.Next() {
		if err := msg.Accumulate(stream.Current()); err != nil {
			t.Fatal(err)
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	wantConversation(t, rec.reqs[0])
	if len(msg.Content) != 2 || msg.Content[0].Text != "listing" || msg.Content[1].AsToolUse().ID != "call_1" ||
		string(msg.Content[1].AsToolUse().Input) != `{"cmd":"ls"}` {
		t.Fatalf("accumulated %s", msg.RawJSON())
	}
	if msg.StopReason != anthropic.StopReasonToolUse || msg.Usage.OutputTokens != 9 || msg.Usage.InputTokens != 100 {
		t.Errorf("stop %q usage %s", msg.StopReason, msg.Usage.RawJSON())
	}
}

// Each new wire answers only the attempt's token (Bearer for Responses,
// x-api-key for Messages), in its own error shape, and a refused caller
// never reaches the attempt.
func TestNewWiresRefuseAnotherAttemptsToken(t *testing.T) {
	rec := &recorder{}
	a := start(t, (&recorder{}).call)
	b := start(t, rec.call)
	_, err := responsesSvc(b, a.Token()).New(context.Background(), responsesParams())
	var oe *openai.Error
	if !errors.As(err, &oe) || oe.StatusCode != http.StatusUnauthorized || oe.Code != "invalid_api_key" {
		t.Errorf("responses with a's token at b: %v", err)
	}
	_, err = anthropicMessages(b, a.Token()).New(context.Background(), messagesParams())
	var ae *anthropic.Error
	if !errors.As(err, &ae) || ae.StatusCode != http.StatusUnauthorized || !strings.Contains(ae.RawJSON(), `"authentication_error"`) {
		t.Errorf("messages with a's token at b: %v", err)
	}
	if len(rec.reqs) != 0 {
		t.Fatalf("b's attempt was reached %d times by refused callers", len(rec.reqs))
	}
}

// A refusal (a spent budget) keeps its status on each wire, in the wire's
// error shape: OpenAI's code, Anthropic's error type for the status.
func TestNewWiresKeepARefusalsStatus(t *testing.T) {
	s := start(t, func(context.Context, models.Request) (models.Reply, error) {
		return models.Reply{}, &agentproxy.Refusal{Status: 429, Type: "insufficient_quota", Code: "insufficient_quota", Message: "budget spent"}
	})
	_, err := responsesSvc(s, s.Token()).New(context.Background(), responsesParams())
	var oe *openai.Error
	if !errors.As(err, &oe) || oe.StatusCode != 429 || oe.Code != "insufficient_quota" {
		t.Errorf("responses: %v", err)
	}
	_, err = anthropicMessages(s, s.Token()).New(context.Background(), messagesParams())
	var ae *anthropic.Error
	if !errors.As(err, &ae) || ae.StatusCode != 429 || !strings.Contains(ae.RawJSON(), "rate_limit_error") || !strings.Contains(ae.RawJSON(), "budget spent") {
		t.Errorf("messages: %v", err)
	}
}

// A request a wire's decoder refuses is answered 400 naming where, in the
// wire's shape, and never reaches the attempt.
func TestNewWiresRefuseBadInputNamingWhere(t *testing.T) {
	rec := &recorder{}
	s := start(t, rec.call)
	for _, c := range []struct{ path, auth, body, want string }{
		{"/v1/responses", "Authorization", `{"model":"x","input":[{"role":"user","content":[{"type":"input_image","image_url":"x"}]}]}`, `input[0].content: part 0: \"input_image\"`},
		{"/v1/responses", "Authorization", `{"model":"x","input":"hi","tools":[{"type":"web_search"}]}`, `tools[0].type`},
		{"/v1/messages", "X-Api-Key", `{"model":"x","max_tokens":5,"messages":[{"role":"user","content":[{"type":"image","source":{}}]}]}`, `messages[0].content[0].type`},
		{"/v1/messages", "X-Api-Key", `{"model":"x","max_tokens":5,"messages":[{"role":"user","content":"x"}],"tools":[{"type":"web_search_20250305","name":"web_search"}]}`, `tools[0].type`},
	} {
		req, _ := http.NewRequest(http.MethodPost, s.Origin()+c.path, strings.NewReader(c.body))
		v := s.Token()
		if c.auth == "Authorization" {
			v = "Bearer " + v
		}
		req.Header.Set(c.auth, v)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var body strings.Builder
		_, _ = ioCopy(&body, resp)
		if resp.StatusCode != http.StatusBadRequest || !strings.Contains(body.String(), c.want) {
			t.Errorf("%s %s: HTTP %d %s, want 400 naming %s", c.path, c.body, resp.StatusCode, body.String(), c.want)
		}
	}
	if len(rec.reqs) != 0 {
		t.Fatalf("a refused request reached the attempt %d times", len(rec.reqs))
	}
}

func ioCopy(b *strings.Builder, resp *http.Response) (int64, error) {
	defer resp.Body.Close()
	return io.Copy(b, resp.Body)
}
