package agentproxy_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/factline/factline/models"
	"github.com/factline/factline/services/runner/agentproxy"
)

// sdkExchange posts body, a request an SDK sent (as its bytes), to path on
// s, streamed or not, and returns the JSON values the SDK is answered: the
// body, or each event's data.
func sdkExchange(t *testing.T, s *agentproxy.Server, path string, body []byte, stream bool) []any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(body, &m); err != nil {
		t.Fatal(err)
	}
	m["stream"] = stream
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequest(http.MethodPost, s.Origin()+path, bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+s.Token())
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	got, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("%s stream=%v: HTTP %d: %s", path, stream, resp.StatusCode, got)
	}
	var values []any
	if !stream {
		var v any
		if err := json.Unmarshal(got, &v); err != nil {
			t.Fatalf("%s: %v: %s", path, err, got)
		}
		return append(values, v)
	}
	sc := bufio.NewScanner(bytes.NewReader(got))
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok || data == "[DONE]" {
			continue
		}
		var v any
		if err := json.Unmarshal([]byte(data), &v); err != nil {
			t.Fatalf("%s: event data %v: %s", path, err, data)
		}
		values = append(values, v)
	}
	return values
}

// objectsOfType calls f with every JSON object below v whose "type" is typ.
func objectsOfType(v any, typ string, f func(map[string]any)) {
	switch x := v.(type) {
	case map[string]any:
		if x["type"] == typ {
			f(x)
		}
		for _, e := range x {
			objectsOfType(e, typ, f)
		}
	case []any:
		for _, e := range x {
			objectsOfType(e, typ, f)
		}
	}
}

// Every output_text part the Responses wire answers holds "annotations",
// an array, as OpenAI's do: the Vercel AI SDK's responses model
// (@ai-sdk/openai 3.0.141, openai.responses(...) with generateText)
// requires it and refused the whole answer ("AI_APICallError: Invalid JSON
// response") when the endpoint left it out. The request is the SDK's
// second, as it sent it.
func TestResponsesOutputTextHoldsAnnotations(t *testing.T) {
	body, err := os.ReadFile("testdata/sdk/vercel-responses-turn2.json")
	if err != nil {
		t.Fatal(err)
	}
	var calls int
	s := start(t, answering("answer.txt now holds 4 and ./check.sh passes.", &calls))
	for _, stream := range []bool{false, true} {
		parts := 0
		for _, v := range sdkExchange(t, s, agentproxy.ResponsesPath, body, stream) {
			objectsOfType(v, "output_text", func(p map[string]any) {
				parts++
				if a, ok := p["annotations"].([]any); !ok || len(a) != 0 {
					t.Errorf("stream=%v: output_text part %v: want \"annotations\": []", stream, p)
				}
			})
		}
		if parts == 0 {
			t.Errorf("stream=%v: no output_text part answered", stream)
		}
	}
}

// A streamed Responses answer opens its message item with "content": [],
// as OpenAI's does: the openai node client's stream helper
// (client.responses.stream(...).finalResponse(), openai 6.49.0) appends
// each response.content_part.added to the item's content and failed with
// "output.content is not iterable" when the endpoint left it out. The
// request is the one the helper sent.
func TestResponsesStreamOpensItsMessageWithContent(t *testing.T) {
	body, err := os.ReadFile("testdata/sdk/openai-node-responses-stream.json")
	if err != nil {
		t.Fatal(err)
	}
	var calls int
	s := start(t, answering("hi there", &calls))
	opened := 0
	for _, v := range sdkExchange(t, s, agentproxy.ResponsesPath, body, true) {
		ev, _ := v.(map[string]any)
		if ev["type"] != "response.output_item.added" {
			continue
		}
		item, _ := ev["item"].(map[string]any)
		if item["type"] != "message" {
			continue
		}
		opened++
		if c, ok := item["content"].([]any); !ok || len(c) != 0 {
			t.Errorf("response.output_item.added opens the message as %v: want \"content\": []", item)
		}
	}
	if opened != 1 {
		t.Errorf("%d message items opened, want 1", opened)
	}
}

// A refusal is the run's end (its budget spent, the run finished or
// ended): no later call is answered, so it says so to the clients that
// would retry it. The openai and @anthropic-ai/sdk node clients retry 409
// and 429 twice by default unless the answer carries x-should-retry:
// false; an agent on either sent each refused call three times (each
// refused again, never counted) and waited out the back-off before it
// could exit.
func TestRefusalSaysNotToRetry(t *testing.T) {
	for _, ref := range []*agentproxy.Refusal{
		{Status: 409, Type: "invalid_request_error", Code: "run_ended", Message: "the run has ended"},
		{Status: 429, Type: "insufficient_quota", Code: "insufficient_quota", Message: "budget spent"},
	} {
		s := start(t, func(context.Context, models.Request) (models.Reply, error) { return models.Reply{}, ref })
		for _, c := range []struct{ path, body string }{
			{agentproxy.ChatPath, hello},
			{agentproxy.MessagesPath, `{"model":"x","max_tokens":5,"messages":[{"role":"user","content":"hello"}]}`},
		} {
			req, err := http.NewRequest(http.MethodPost, s.Origin()+c.path, strings.NewReader(c.body))
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Authorization", "Bearer "+s.Token())
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != ref.Status || resp.Header.Get("X-Should-Retry") != "false" {
				t.Errorf("%s, refused %d: HTTP %d, x-should-retry %q; want %d and \"false\"", c.path, ref.Status, resp.StatusCode, resp.Header.Get("X-Should-Retry"), ref.Status)
			}
		}
	}
}

// The Messages wire is served at the endpoint's /messages too: the runner
// sets ANTHROPIC_BASE_URL to the origin (Anthropic's clients and
// claude-code add /v1/messages), while the Vercel AI SDK's
// @ai-sdk/anthropic (3.0.140), which reads the same variable, takes it as
// the versioned base and adds /messages alone. An agent made with
// createAnthropic() and nothing else was answered 404 at its first call.
// The request is that agent's, as it sent it.
func TestMessagesAreServedWithoutTheVersionPrefix(t *testing.T) {
	body, err := os.ReadFile("testdata/sdk/vercel-anthropic-env-turn1.json")
	if err != nil {
		t.Fatal(err)
	}
	var calls int
	s := start(t, answering("hi there", &calls))
	req, err := http.NewRequest(http.MethodPost, s.Origin()+"/messages", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("x-api-key", s.Token())
	req.Header.Set("anthropic-version", "2023-06-01")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(got), `"type":"message"`) || calls != 1 {
		t.Fatalf("POST /messages: HTTP %d %s (the attempt called %d times); want 200 and a Messages answer", resp.StatusCode, got, calls)
	}
}

// chanHandler sends each log record's message to a channel.
type chanHandler struct{ msgs chan string }

func (h chanHandler) Enabled(context.Context, slog.Level) bool      { return true }
func (h chanHandler) Handle(_ context.Context, r slog.Record) error { h.msgs <- r.Message; return nil }
func (h chanHandler) WithAttrs([]slog.Attr) slog.Handler            { return h }
func (h chanHandler) WithGroup(string) slog.Handler                 { return h }

// logged reports whether a message containing part reaches msgs before
// the bound passes; the bound only ends a failing test.
func logged(msgs <-chan string, part string, bound time.Duration) bool {
	timeout := time.After(bound)
	for {
		select {
		case msg := <-msgs:
			if strings.Contains(msg, part) {
				return true
			}
		case <-timeout:
			return false
		}
	}
}

// An agent whose client gives up on a call before the model answers (an
// SDK's timeout shorter than the model's latency: the openai client's
// timeout option) is warned about on the runner's log: the call is
// recorded as a turn whose reply the agent never read, and the client's
// retry is a new turn, counted again. Found by an openai-node agent with
// a 1 s timeout on a model taking 3 s: three turns for one call, and the
// run's first reply (the fix) never reached the agent; nothing said why.
func TestAnAgentThatHangsUpBeforeItsAnswerIsLogged(t *testing.T) {
	msgs := make(chan string, 16)
	called := make(chan struct{})
	s, err := agentproxy.Start(func(ctx context.Context, _ models.Request) (models.Reply, error) {
		close(called)
		<-ctx.Done() // the model takes longer than the client waits
		return models.Reply{Text: "late", Finish: models.FinishStop}, nil
	}, "scripted-model", slog.New(chanHandler{msgs}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	ctx, cancel := context.WithCancel(context.Background())
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.Origin()+agentproxy.ChatPath, strings.NewReader(hello))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+s.Token())
	done := make(chan error, 1)
	go func() {
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
		}
		done <- err
	}()
	<-called
	cancel() // the client gives up
	if err := <-done; err == nil {
		t.Fatal("the request was answered though its client gave up")
	}
	// The bound only ends a failing test: the warning follows the call's
	// return at once.
	if !logged(msgs, "hung up before its answer", time.Minute) {
		t.Fatal("the agent hung up before its answer, and nothing was logged")
	}
}

// An item_reference to a message item this endpoint answered is resolved
// to that message, as OpenAI resolves a stored item: the Vercel AI SDK's
// responses model (@ai-sdk/openai 3.0.141; openai(...) and
// openai.responses(...) with store on, its default) sends an earlier
// answer's text back as {"type":"item_reference","id":"msg_…"}, and the
// endpoint refused the request (400, "item_reference items are not
// supported"), so the agent failed at its second call whenever the model
// had said something beside its tool calls. A reference to an ID the
// endpoint never answered is refused, naming it. The requests are the
// SDK's, the second naming the first answer's message as the SDK does.
func TestResponsesItemReferenceToAnAnsweredMessageIsResolved(t *testing.T) {
	first, err := os.ReadFile("testdata/sdk/vercel-responses-store-turn1.json")
	if err != nil {
		t.Fatal(err)
	}
	second, err := os.ReadFile("testdata/sdk/vercel-responses-store-turn2.json")
	if err != nil {
		t.Fatal(err)
	}
	var got []models.Request
	s := start(t, func(_ context.Context, req models.Request) (models.Reply, error) {
		got = append(got, req)
		if len(got) == 1 {
			return models.Reply{Text: "I will write the answer and run the check.", Finish: models.FinishToolCalls, Calls: []models.ToolCall{
				{ID: "call-1-1", Name: "bash", Args: `{"command":"printf '4\\n' > answer.txt"}`},
				{ID: "call-1-2", Name: "bash", Args: `{"command":"./check.sh"}`},
			}}, nil
		}
		return models.Reply{Text: "done", Finish: models.FinishStop}, nil
	})
	msgID := ""
	for _, v := range sdkExchange(t, s, agentproxy.ResponsesPath, first, true) {
		objectsOfType(v, "message", func(m map[string]any) {
			if id, _ := m["id"].(string); id != "" {
				msgID = id
			}
		})
	}
	if msgID == "" {
		t.Fatal("the first answer has no message item")
	}
	body := bytes.ReplaceAll(second, []byte("msg_resp_1796325701101091646"), []byte(msgID))
	sdkExchange(t, s, agentproxy.ResponsesPath, body, true)
	if len(got) != 2 {
		t.Fatalf("the attempt was called %d times, want 2", len(got))
	}
	msgs := got[1].Messages
	if len(msgs) < 3 || msgs[2].Role != models.RoleAssistant || msgs[2].Content != "I will write the answer and run the check." || len(msgs[2].ToolCalls) != 2 {
		t.Fatalf("the second call's messages %+v: want the referenced answer's text as the assistant message holding its two calls", msgs)
	}
	unknown := bytes.ReplaceAll(second, []byte("msg_resp_1796325701101091646"), []byte("msg_elsewhere"))
	code, answer := postTo(t, s, agentproxy.ResponsesPath, string(unknown))
	if code != http.StatusBadRequest || !strings.Contains(string(answer), `input[2].id: item_reference \"msg_elsewhere\"`) {
		t.Fatalf("a reference to an item never answered: HTTP %d %s; want 400 naming input[2].id", code, answer)
	}
}

// A Responses answer always holds a usage object, zeros when the model
// reported none, as OpenAI's completed responses do: the AI SDK's
// responses model (@ai-sdk/openai 3.0.88 inside @mastra/core 1.71, whose
// model router sends "openai/<model>" there) takes "usage" as an object or
// absent, never null (3.0.141 takes null too). On a reply without usage (a scripted turn without
// one, a provider that reports none) a Mastra agent's generate failed at
// once ("AI_APICallError: Invalid JSON response"), and its stream read the
// response.completed event as unparsable: the step's finish reason was
// "other", so after the model's final answer the agent called again, was
// refused (the run had ended) and ended with finish reason "error" and no
// text. The request is that agent's first, as it sent it; the replies are
// the scripted turns it was answered.
func TestResponsesAnswerWithoutUsageHoldsAUsageObject(t *testing.T) {
	body, err := os.ReadFile("testdata/sdk/mastra-responses-turn1.json")
	if err != nil {
		t.Fatal(err)
	}
	for _, reply := range []models.Reply{
		{Finish: models.FinishToolCalls, Calls: []models.ToolCall{{ID: "call-1-1", Name: "read_file", Args: `{"path":"answer.txt"}`}}},
		{Text: "Done: answer.txt holds 4.", Finish: models.FinishStop},
	} {
		s := start(t, func(context.Context, models.Request) (models.Reply, error) { return reply, nil })
		for _, stream := range []bool{false, true} {
			answered := 0
			for _, v := range sdkExchange(t, s, agentproxy.ResponsesPath, body, stream) {
				resp, _ := v.(map[string]any)
				if stream {
					if resp["type"] != "response.completed" {
						continue
					}
					resp, _ = resp["response"].(map[string]any)
				}
				answered++
				usage, ok := resp["usage"].(map[string]any)
				in, inOK := usage["input_tokens"].(float64)
				out, outOK := usage["output_tokens"].(float64)
				if !ok || !inOK || !outOK || in != 0 || out != 0 {
					t.Errorf("reply %q, stream=%v: usage %v; want an object with input_tokens and output_tokens 0", reply.Text, stream, resp["usage"])
				}
			}
			if answered != 1 {
				t.Errorf("reply %q, stream=%v: %d whole responses answered, want 1", reply.Text, stream, answered)
			}
		}
	}
}
