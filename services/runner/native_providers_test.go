package runner_test

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/factline/factline/bus"
	"github.com/factline/factline/cases"
	"github.com/factline/factline/events"
	"github.com/factline/factline/fleet/fleettest"
	"github.com/factline/factline/models/anthropic"
	"github.com/factline/factline/models/anthropic/anthropictest"
	"github.com/factline/factline/models/responses/responsestest"
)

// runNative runs the fixture case under a treatment naming provider at
// baseURL and returns its log and ending.
func (e *env) runNative(provider, baseURL, budget, run string) (bus.RunLog, events.RunEnded) {
	e.t.Helper()
	tr, err := cases.ParseTreatment("t.yaml", []byte(fmt.Sprintf("id: native\nmodel: {provider: %s, name: native-test, base_url: %q, input_price: 1000000, output_price: 2000000}\n", provider, baseURL)))
	must(e.t, err)
	p, err := fleettest.Publish(e.ctx, e.b, fixtureCase(e.t, budget), tr)
	must(e.t, err)
	must(e.t, fleettest.Request(e.ctx, e.b, "suite", run, p, 1))
	log, end, err := fleettest.WaitEnded(e.ctx, e.b, "suite", run)
	must(e.t, err)
	return log, end
}

// checkRecordedBodies checks that every turn's request blob, as the log
// names it in turn.started, is byte for byte the body the provider's
// server received, in order.
func (e *env) checkRecordedBodies(log bus.RunLog, received [][]byte) {
	e.t.Helper()
	started := kinds(log, events.KindTurnStarted)
	if len(started) != len(received) || len(received) == 0 {
		e.t.Fatalf("%d turns started, the provider received %d requests", len(started), len(received))
	}
	for i, f := range started {
		blob, err := e.b.Blobs().Get(e.ctx, f.Body.(events.TurnStarted).ContextDigest)
		must(e.t, err)
		if !bytes.Equal(blob, received[i]) {
			e.t.Fatalf("turn %d: the recorded request is not the body sent:\nrecorded %s\nsent     %s", i+1, blob, received[i])
		}
	}
}

// A run on Anthropic's Messages API: the model's tool_use blocks run as
// calls, their results go back as tool_result blocks (the fake checks they
// answer the turn before), the run ends done, every turn's recorded
// request is the body the API received, and each reply records the
// provider, the usage with its cache reads and writes, and its cost.
func TestARunOnAnthropicMessagesRecordsTheBodiesSent(t *testing.T) {
	t.Setenv(anthropic.EnvAPIKey, "sk-ant-runner-test")
	e := start(t)
	fake := anthropictest.Start(t, func(n int, req anthropictest.Request) anthropictest.Reply {
		u := anthropictest.Usage{InputTokens: 100, OutputTokens: 20, CacheReadInputTokens: 50, CacheCreationInputTokens: 0}
		if len(req.ToolResults()) == 0 {
			return anthropictest.ToolUse(req.Model, u,
				anthropictest.Call{ID: "toolu_w", Name: "write_file", Input: `{"path":"answer.txt","content":"4\n"}`},
				anthropictest.Call{ID: "toolu_r", Name: "run_command", Input: `{"command":"./check.sh"}`})
		}
		return anthropictest.ToolUse(req.Model, u,
			anthropictest.Call{ID: "toolu_done", Name: "task_complete", Input: `{"status":"done","evidence":["t1/toolu_r"]}`})
	})
	log, end := e.runNative(cases.ProviderAnthropic, fake.URL, "{steps: 4, cost: 100000}", "anthropic-run")
	if end.Status != events.RunDone {
		t.Fatalf("ended %s/%q, want done", end.Status, end.Reason)
	}
	e.checkRecordedBodies(log, fake.Bodies())
	for _, f := range kinds(log, events.KindModelReplied) {
		r := f.Body.(events.ModelReplied)
		u := r.Usage
		if r.Provider != anthropic.Provider || u == nil || u.InputTokens != 150 || u.CachedInputTokens == nil || *u.CachedInputTokens != 50 ||
			u.CacheWriteInputTokens == nil || u.Cost == nil || *u.Cost != 100+50+20*2 {
			t.Fatalf("model.replied %+v usage %+v", r, u)
		}
	}
}

// The same on OpenAI's Responses API: function_call items run as calls,
// their outputs go back as function_call_output items, and every turn's
// recorded request is the body the API received.
func TestARunOnTheResponsesAPIRecordsTheBodiesSent(t *testing.T) {
	t.Setenv("FACTLINE_OPENAI_API_KEY", "sk-responses-runner-test")
	e := start(t)
	fake := responsestest.Start(t, func(n int, req responsestest.Request) responsestest.Reply {
		u := responsestest.Usage{InputTokens: 100, CachedTokens: 60, OutputTokens: 20, ReasoningTokens: 5}
		if len(req.Outputs()) == 0 {
			return responsestest.FunctionCalls(req.Model, u,
				responsestest.Call{CallID: "call_w", Name: "write_file", Arguments: `{"path":"answer.txt","content":"4\n"}`},
				responsestest.Call{CallID: "call_r", Name: "run_command", Arguments: `{"command":"./check.sh"}`})
		}
		return responsestest.FunctionCalls(req.Model, u,
			responsestest.Call{CallID: "call_done", Name: "task_complete", Arguments: `{"status":"done","evidence":["t1/call_r"]}`})
	})
	log, end := e.runNative(cases.ProviderOpenAIResponses, fake.URL, "{steps: 4, cost: 100000}", "responses-run")
	if end.Status != events.RunDone {
		t.Fatalf("ended %s/%q, want done", end.Status, end.Reason)
	}
	e.checkRecordedBodies(log, fake.Bodies())
	for _, f := range kinds(log, events.KindModelReplied) {
		r := f.Body.(events.ModelReplied)
		if u := r.Usage; r.Provider != "openai-responses" || u == nil || u.ReasoningTokens == nil || *u.ReasoningTokens != 5 || *u.CachedInputTokens != 60 ||
			u.Cost == nil || *u.Cost != 40+60+20*2 {
			t.Fatalf("model.replied %+v", r)
		}
	}
}

// What each provider's stop reasons and errors make of a run, as the
// Chat Completions client's do: a refusal ends it for review
// (needs_human, model_refused); a reply cut at max tokens is recorded
// with the finish "length" and taken as any reply is (here a text answer
// the stand-in decider accepts); an API that stays
// overloaded (Anthropic's 529) or rate limited ends it errored, naming the
// error.
func TestNativeProviderStopsAndErrorsEndRunsAsChatCompletionsDoes(t *testing.T) {
	t.Setenv(anthropic.EnvAPIKey, "sk-ant-runner-test")
	t.Setenv("FACTLINE_OPENAI_API_KEY", "sk-responses-runner-test")
	e := start(t)
	for _, tc := range []struct {
		name     string
		provider string
		url      string
		status   events.RunStatus
		reason   string
		finish   string
	}{
		{"anthropic refusal", cases.ProviderAnthropic,
			anthropictest.Start(t, anthropictest.Replies(anthropictest.Refusal("m", "", anthropictest.Usage{InputTokens: 5, OutputTokens: 1}))).URL,
			events.RunNeedsHuman, "model_refused", "refusal"},
		{"responses refusal", cases.ProviderOpenAIResponses,
			responsestest.Start(t, responsestest.Replies(responsestest.Refusal("m", "I can't help with that.", responsestest.Usage{InputTokens: 5, OutputTokens: 6}))).URL,
			events.RunNeedsHuman, "model_refused", "refusal"},
		{"anthropic max tokens", cases.ProviderAnthropic,
			anthropictest.Start(t, anthropictest.Replies(anthropictest.MaxTokens("m", "I was about to", anthropictest.Usage{InputTokens: 5, OutputTokens: 4096}))).URL,
			events.RunDone, "", "length"},
		{"responses max output tokens", cases.ProviderOpenAIResponses,
			responsestest.Start(t, responsestest.Replies(responsestest.MaxOutputTokens("m", "I was about to", responsestest.Usage{InputTokens: 5, OutputTokens: 4096}))).URL,
			events.RunDone, "", "length"},
		{"anthropic overloaded", cases.ProviderAnthropic,
			anthropictest.Start(t, anthropictest.Replies(overloadedBriefly())).URL,
			events.RunErrored, "HTTP 529", ""},
		{"responses bad request", cases.ProviderOpenAIResponses,
			responsestest.Start(t, responsestest.Replies(responsestest.Error(400, "invalid_request_error", "", "Unknown parameter: 'foo'."))).URL,
			events.RunErrored, "bad_request (HTTP 400)", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			log, end := e.runNative(tc.provider, tc.url, "{steps: 4}", strings.ReplaceAll(tc.name, " ", "-"))
			if end.Status != tc.status || !strings.Contains(end.Reason, tc.reason) {
				t.Fatalf("ended %s/%q, want %s naming %q", end.Status, end.Reason, tc.status, tc.reason)
			}
			replies := kinds(log, events.KindModelReplied)
			if tc.finish != "" && (len(replies) == 0 || replies[0].Body.(events.ModelReplied).Finish != tc.finish) {
				t.Fatalf("first reply %+v, want finish %q", replies, tc.finish)
			}
		})
	}
}

// overloadedBriefly is Anthropic's 529 asking for a 10ms wait, so that the
// client's retries run out quickly.
func overloadedBriefly() anthropictest.Reply {
	r := anthropictest.Overloaded()
	r.Header = map[string]string{"retry-after": "0.01"}
	return r
}

// A native provider's calls take the response cache as Chat Completions'
// do (under a fleet-wide limit, which admits them): a second run of the
// same case under a treatment that reads and writes the cache is answered
// from the first run's replies, no request reaching the API, the hits
// recorded cached and billed nothing.
func TestANativeProviderTakesTheResponseCache(t *testing.T) {
	t.Setenv(anthropic.EnvAPIKey, "sk-ant-runner-test")
	e := start(t)
	fake := anthropictest.Start(t, func(n int, req anthropictest.Request) anthropictest.Reply {
		u := anthropictest.Usage{InputTokens: 100, OutputTokens: 20}
		if len(req.ToolResults()) == 0 {
			return anthropictest.ToolUse(req.Model, u,
				anthropictest.Call{ID: "toolu_w", Name: "write_file", Input: `{"path":"answer.txt","content":"4\n"}`},
				anthropictest.Call{ID: "toolu_r", Name: "run_command", Input: `{"command":"./check.sh"}`})
		}
		return anthropictest.ToolUse(req.Model, u,
			anthropictest.Call{ID: "toolu_done", Name: "task_complete", Input: `{"status":"done","evidence":["t1/toolu_r"]}`})
	})
	tr, err := cases.ParseTreatment("t.yaml", []byte(fmt.Sprintf(`id: cached
model: {provider: anthropic, name: native-test, base_url: %q, input_price: 1000000, output_price: 2000000, limits: {max_concurrent: 1}}
cache: {mode: read_write}
`, fake.URL)))
	must(t, err)
	p, err := fleettest.Publish(e.ctx, e.b, fixtureCase(t, "{steps: 4, cost: 100000}"), tr)
	must(t, err)
	for i, run := range []string{"first", "second"} {
		must(t, fleettest.Request(e.ctx, e.b, "suite", run, p, 1))
		log, end, err := fleettest.WaitEnded(e.ctx, e.b, "suite", run)
		must(t, err)
		if end.Status != events.RunDone {
			t.Fatalf("%s run ended %s/%q", run, end.Status, end.Reason)
		}
		replies := kinds(log, events.KindModelReplied)
		if len(replies) != 2 {
			t.Fatalf("%s run: %d replies", run, len(replies))
		}
		for _, f := range replies {
			r := f.Body.(events.ModelReplied)
			if cached := r.Cached != nil; cached != (i == 1) {
				t.Fatalf("%s run: reply cached=%v", run, cached)
			}
			if i == 1 && (r.Usage == nil || r.Usage.Cost == nil || *r.Usage.Cost != 0 || r.Provider != anthropic.Provider) {
				t.Fatalf("a cache hit %+v, want billed 0 under provider anthropic", r)
			}
		}
		if n := len(fake.Bodies()); n != 2 {
			t.Fatalf("after the %s run the API received %d requests, want 2 (the second run served from the cache)", run, n)
		}
	}
}
