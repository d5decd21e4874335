package clients_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	anthropic "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/openai/openai-go/v3"
	ooption "github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"
	"github.com/openai/openai-go/v3/shared"

	"github.com/factline/factline/models"
	hanthropic "github.com/factline/factline/models/anthropic"
	"github.com/factline/factline/models/anthropic/anthropictest"
	hopenai "github.com/factline/factline/models/openai"
	hresponses "github.com/factline/factline/models/responses"
	"github.com/factline/factline/models/responses/responsestest"
	"github.com/factline/factline/services/runner/agentproxy"
)

// The end to end of an agent's tool choice and structured output: an
// official client sends them to the endpoint, whose call answers with a
// hosted model as the runner does (the treatment's settings in place of
// the agent's), and the hosted model's wire (a fake provider on
// 127.0.0.1) receives them.

// verdictSchema is the JSON schema the agents ask their answer to take.
var verdictSchema = map[string]any{
	"type":                 "object",
	"properties":           map[string]any{"answer": map[string]any{"type": "string"}},
	"required":             []any{"answer"},
	"additionalProperties": false,
}

// hostedCall is the endpoint's call answering with m, as the runner's
// agent turn does: the treatment's settings replace the agent's.
func hostedCall(m models.Model) agentproxy.Call {
	return func(ctx context.Context, req models.Request) (models.Reply, error) {
		req.Turn, req.Settings = 1, models.Settings{Model: "treatment-model"}
		return m.Complete(ctx, req)
	}
}

// sentTop returns the top-level fields of the one body a fake provider
// received.
func sentTop(t *testing.T, bodies [][]byte) map[string]json.RawMessage {
	t.Helper()
	if len(bodies) != 1 {
		t.Fatalf("the provider got %d requests, want 1", len(bodies))
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(bodies[0], &top); err != nil {
		t.Fatalf("the provider got a body that is not a JSON object: %v", err)
	}
	return top
}

// wantJSON checks that a field the provider received holds want.
func wantJSON(t *testing.T, top map[string]json.RawMessage, field, want string) {
	t.Helper()
	var got, exp any
	if err := json.Unmarshal(top[field], &got); err != nil {
		t.Errorf("the provider got no %s (%v)", field, err)
		return
	}
	_ = json.Unmarshal([]byte(want), &exp)
	g, _ := json.Marshal(got)
	e, _ := json.Marshal(exp)
	if string(g) != string(e) {
		t.Errorf("the provider got %s %s, want %s", field, g, e)
	}
}

// chatProvider is a fake Chat Completions provider that keeps the bodies
// it received and answers each with a JSON text.
type chatProvider struct {
	mu     sync.Mutex
	bodies [][]byte
}

func (p *chatProvider) handle(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	p.mu.Lock()
	p.bodies = append(p.bodies, body)
	p.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	_, _ = io.WriteString(w, `{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"treatment-model",`+
		`"choices":[{"index":0,"message":{"role":"assistant","content":"{\"answer\":\"yes\"}"},"finish_reason":"stop"}],`+
		`"usage":{"prompt_tokens":10,"completion_tokens":5,"total_tokens":15}}`)
}

func TestChatAgentsToolChoiceAndResponseFormatReachTheModel(t *testing.T) {
	prov := &chatProvider{}
	srv := httptest.NewServer(http.HandlerFunc(prov.handle))
	t.Cleanup(srv.Close)
	m, err := hopenai.New(hopenai.Config{BaseURL: srv.URL + "/v1", APIKey: "sk-test", Model: "treatment-model"})
	if err != nil {
		t.Fatal(err)
	}
	s := start(t, hostedCall(m))
	c := openai.NewClient(ooption.WithBaseURL(s.BaseURL()), ooption.WithAPIKey(s.Token()), ooption.WithMaxRetries(0))
	got, err := c.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{
		Model:    "gpt-whatever",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("is it done?")},
		Tools: []openai.ChatCompletionToolUnionParam{openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{
			Name: "exec_command", Parameters: shared.FunctionParameters{"type": "object", "properties": map[string]any{}}})},
		ToolChoice: openai.ChatCompletionToolChoiceOptionUnionParam{OfFunctionToolChoice: &openai.ChatCompletionNamedToolChoiceParam{
			Function: openai.ChatCompletionNamedToolChoiceFunctionParam{Name: "exec_command"}}},
		ResponseFormat: openai.ChatCompletionNewParamsResponseFormatUnion{OfJSONSchema: &shared.ResponseFormatJSONSchemaParam{
			JSONSchema: shared.ResponseFormatJSONSchemaJSONSchemaParam{Name: "verdict", Schema: verdictSchema, Strict: openai.Bool(true)}}},
	})
	if err != nil {
		t.Fatalf("the agent's call: %v", err)
	}
	if len(got.Choices) != 1 || got.Choices[0].Message.Content != `{"answer":"yes"}` {
		t.Errorf("the agent got %+v, want the model's JSON text", got.Choices)
	}
	prov.mu.Lock()
	top := sentTop(t, prov.bodies)
	prov.mu.Unlock()
	wantJSON(t, top, "tool_choice", `{"type":"function","function":{"name":"exec_command"}}`)
	wantJSON(t, top, "response_format", `{"type":"json_schema","json_schema":{"name":"verdict","strict":true,"schema":{"type":"object","properties":{"answer":{"type":"string"}},"required":["answer"],"additionalProperties":false}}}`)
}

func TestResponsesAgentsToolChoiceAndTextFormatReachTheModel(t *testing.T) {
	fake := responsestest.Start(t, responsestest.Replies(responsestest.Text("treatment-model", `{"answer":"yes"}`, responsestest.Usage{InputTokens: 10, OutputTokens: 5})))
	m, err := hresponses.New(hresponses.Config{BaseURL: fake.URL, APIKey: "sk-test", Model: "treatment-model"})
	if err != nil {
		t.Fatal(err)
	}
	s := start(t, hostedCall(m))
	_, err = responsesSvc(s, s.Token()).New(context.Background(), responses.ResponseNewParams{
		Model: "gpt-whatever",
		Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("is it done?")},
		Tools: []responses.ToolUnionParam{responses.ToolParamOfFunction("exec_command",
			map[string]any{"type": "object", "properties": map[string]any{}}, false)},
		ToolChoice: responses.ResponseNewParamsToolChoiceUnion{OfToolChoiceMode: openai.Opt(responses.ToolChoiceOptionsRequired)},
		Text: responses.ResponseTextConfigParam{Format: responses.ResponseFormatTextConfigUnionParam{
			OfJSONSchema: &responses.ResponseFormatTextJSONSchemaConfigParam{Name: "verdict", Schema: verdictSchema, Strict: openai.Bool(true)}}},
	})
	if err != nil {
		t.Fatalf("the agent's call: %v", err)
	}
	top := sentTop(t, fake.Bodies())
	wantJSON(t, top, "tool_choice", `"required"`)
	wantJSON(t, top, "text", `{"format":{"type":"json_schema","name":"verdict","strict":true,"schema":{"type":"object","properties":{"answer":{"type":"string"}},"required":["answer"],"additionalProperties":false}}}`)
}

func TestMessagesAgentsToolChoiceAndOutputFormatReachTheModel(t *testing.T) {
	fake := anthropictest.Start(t, anthropictest.Replies(anthropictest.Text("treatment-model", `{"answer":"yes"}`, anthropictest.Usage{InputTokens: 10, OutputTokens: 5})))
	m, err := hanthropic.New(hanthropic.Config{BaseURL: fake.URL, APIKey: "sk-ant-test", Model: "treatment-model"})
	if err != nil {
		t.Fatal(err)
	}
	s := start(t, hostedCall(m))
	_, err = anthropicMessages(s, s.Token()).New(context.Background(), anthropic.MessageNewParams{
		Model:     "claude-whatever",
		MaxTokens: 1000,
		Messages:  []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("is it done?"))},
		Tools: []anthropic.ToolUnionParam{{OfTool: &anthropic.ToolParam{Name: "exec_command",
			InputSchema: anthropic.ToolInputSchemaParam{Properties: map[string]any{}}}}},
		ToolChoice:   anthropic.ToolChoiceParamOfTool("exec_command"),
		OutputConfig: anthropic.OutputConfigParam{Format: anthropic.JSONOutputFormatParam{Schema: verdictSchema}},
	})
	if err != nil {
		t.Fatalf("the agent's call: %v", err)
	}
	top := sentTop(t, fake.Bodies())
	wantJSON(t, top, "tool_choice", `{"type":"tool","name":"exec_command"}`)
	wantJSON(t, top, "output_config", `{"format":{"type":"json_schema","schema":{"type":"object","properties":{"answer":{"type":"string"}},"required":["answer"],"additionalProperties":false}}}`)
}
