package runner_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/factline/factline/bus"
	"github.com/factline/factline/cases"
	"github.com/factline/factline/events"
	"github.com/factline/factline/models/anthropic"
	"github.com/factline/factline/models/anthropic/anthropictest"
)

// turnsOf returns a run's turn.started and model.replied facts.
func turnsOf(log bus.RunLog) ([]events.TurnStarted, []events.ModelReplied) {
	var started []events.TurnStarted
	var replied []events.ModelReplied
	for _, f := range log.Facts() {
		switch b := f.Body.(type) {
		case events.TurnStarted:
			started = append(started, b)
		case events.ModelReplied:
			replied = append(replied, b)
		}
	}
	return started, replied
}

// An external agent's tool choice and output format are in the request
// the runner stores (the blob turn.started names) and so in the response
// cache's key: a run whose agent asks for no format is not served the
// replies of one whose agent asked for a JSON schema, while a run asking
// as the first did is.
func TestExternalAgentsDemandsAreStoredAndKeyTheCache(t *testing.T) {
	t.Parallel()
	e, _ := startWith(t)
	bin := buildAgent(t)
	c := fixtureCase(t, "{steps: 10}")
	cached := func(id string, argv ...string) *cases.Treatment {
		tr := agentTreatment(t, fixScript, append([]string{bin}, argv...)...)
		tr.ID, tr.Cache = id, &cases.Cache{Mode: cases.CacheReadWrite}
		return tr
	}
	withJSON := cached("external-json", "--answer-format", "json_schema", "{{.Instruction}}")
	plain := cached("external-plain", "{{.Instruction}}")

	log, end := e.runAgent(c, withJSON, "demands-1")
	if end.Status != events.RunDone {
		t.Fatalf("the first run ended %s (%s), want done", end.Status, end.Reason)
	}
	started, _ := turnsOf(log)
	if len(started) == 0 {
		t.Fatal("the first run started no turn")
	}
	body, err := e.b.Blobs().Get(e.ctx, started[0].ContextDigest)
	must(t, err)
	for _, want := range []string{`"tool_choice":{"mode":"auto"}`, `"output":{"kind":"json_schema","name":"answer","schema":{`, `"strict":true`} {
		if !strings.Contains(string(body), want) {
			t.Errorf("the stored request lacks %s: %s", want, body)
		}
	}

	log, end = e.runAgent(c, plain, "demands-2")
	if end.Status != events.RunDone {
		t.Fatalf("the plain run ended %s (%s), want done", end.Status, end.Reason)
	}
	_, replied := turnsOf(log)
	for i, r := range replied {
		if r.Cached != nil {
			t.Errorf("the plain run's reply %d was served from the cache entry of %s/%s turn %d, a reply to a request for a JSON schema",
				i+1, r.Cached.Suite, r.Cached.Run, r.Cached.Turn)
		}
	}

	log, _ = e.runAgent(c, withJSON, "demands-3")
	if _, replied := turnsOf(log); len(replied) == 0 || replied[0].Cached == nil {
		t.Errorf("a run asking as the first did was not served its first reply from the cache: %+v", replied)
	}
}

// An agent asking for what the treatment's model cannot carry (JSON mode,
// which Anthropic's wire has no place for) is refused as the endpoint
// refuses an invalid request: its wire's 400 naming what, no turn started,
// nothing sent to the provider, and the run's ending, when the agent gives
// up, says why. The request is never sent without what it asked for.
func TestExternalAgentsDemandTheModelCannotCarryIsRefused(t *testing.T) {
	t.Setenv(anthropic.EnvAPIKey, "sk-ant-demands-test-key")
	e, logs := startWith(t)
	bin := buildAgent(t)
	fake := anthropictest.Start(t, anthropictest.Replies(anthropictest.Text("upstream-test", "{}", anthropictest.Usage{InputTokens: 1, OutputTokens: 1})))
	tr, err := cases.ParseTreatment("t.yaml", []byte(fmt.Sprintf("id: external\nmodel: {provider: %s, name: upstream-test, base_url: %q}\n", cases.ProviderAnthropic, fake.URL)))
	must(t, err)
	tr.Agent = &cases.Agent{Command: []string{bin, "--answer-format", "json_object", "{{.Instruction}}"}, Version: []string{cases.AgentNoVersion}}
	log, end := e.runAgent(fixtureCase(t, "{steps: 10}"), tr, "demands-uncarried")
	if started, _ := turnsOf(log); len(started) != 0 {
		t.Errorf("%d turns started, want none", len(started))
	}
	if n := len(fake.Bodies()); n != 0 {
		t.Errorf("the provider got %d requests, want none", n)
	}
	if end.Status != events.RunIncomplete || !strings.Contains(end.Reason, "refused as invalid") || !strings.Contains(end.Reason, "json_object") {
		t.Errorf("ended %s (%s), want incomplete, the agent's last request refused as invalid, naming json_object", end.Status, end.Reason)
	}
	var line string
	for l := range strings.SplitSeq(logs.String(), "\n") {
		if strings.Contains(l, "external agent ended") && strings.Contains(l, "run=demands-uncarried ") {
			line = l
		}
	}
	if !strings.Contains(line, "HTTP 400: ") || !strings.Contains(line, "json_object") || !strings.Contains(line, `\"type\":\"invalid_request_error\"`) {
		t.Errorf("the agent was not answered 400 in its wire's shape naming json_object: %.800s", line)
	}
}
