package runner_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/factline/factline/cases"
	"github.com/factline/factline/events"
	"github.com/factline/factline/models/anthropic"
	"github.com/factline/factline/models/anthropic/anthropictest"
	"github.com/factline/factline/models/responses/responsestest"
)

// When the treatment's provider refuses a request an external agent made
// (400, 413, 422: the prompt too long, a parameter it does not take), the
// agent is answered as the provider would answer it, in the agent's own
// wire: the provider's status and its message (the API key redacted),
// not 409 run_ended, which said the run had ended but not why. The run
// ends as the built-in loop's does on the same answer (errored,
// model_error naming the status and the provider's message: a request
// the provider refuses is not retried), its one turn started and never
// replied. The old endpoint answered the agent 409 "run_ended".
func TestExternalAgentWhoseRequestTheProviderRefusesGetsTheProvidersAnswer(t *testing.T) {
	const antKey, oaiKey = "sk-ant-upstream-test-key", "sk-oai-upstream-test-key"
	t.Setenv(anthropic.EnvAPIKey, antKey)
	t.Setenv("FACTLINE_OPENAI_API_KEY", oaiKey)
	e, logs := startWith(t)
	bin := buildAgent(t)
	for _, tc := range []struct {
		name, provider, url string
		status              int
		message             string
	}{
		{"anthropic-400", cases.ProviderAnthropic, anthropictest.Start(t, anthropictest.Replies(anthropictest.Error(400, "invalid_request_error",
			"prompt is too long: 210000 tokens > 200000 maximum (key "+antKey+")"))).URL, 400, "prompt is too long: 210000 tokens"},
		{"responses-413", cases.ProviderOpenAIResponses, responsestest.Start(t, responsestest.Replies(responsestest.Error(413, "invalid_request_error", "",
			"Request too large for gpt-x (key "+oaiKey+")."))).URL, 413, "Request too large for gpt-x"},
		{"responses-422", cases.ProviderOpenAIResponses, responsestest.Start(t, responsestest.Replies(responsestest.Error(422, "invalid_request_error", "",
			"Unprocessable: reasoning.effort 'max' is not supported."))).URL, 422, "reasoning.effort 'max' is not supported"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr, err := cases.ParseTreatment("t.yaml", []byte(fmt.Sprintf("id: external\nmodel: {provider: %s, name: upstream-test, base_url: %q}\n", tc.provider, tc.url)))
			must(t, err)
			tr.Agent = &cases.Agent{Command: []string{bin, "{{.Instruction}}"}, Version: []string{cases.AgentNoVersion}}
			run := "ext-" + tc.name
			log, end := e.runAgent(fixtureCase(t, "{steps: 10}"), tr, run)
			t.Logf("ended %s (%s)", end.Status, end.Reason)
			if started, replied, _ := turnFacts(log); started != 1 || replied != 0 {
				t.Errorf("turns started %d, replied %d; want 1 started and none replied", started, replied)
			}
			if end.Status != events.RunErrored || !strings.HasPrefix(end.Reason, "model_error: ") ||
				!strings.Contains(end.Reason, fmt.Sprintf("bad_request (HTTP %d)", tc.status)) || !strings.Contains(end.Reason, tc.message) {
				t.Errorf("ended %s (%s), want errored model_error naming bad_request (HTTP %d) and %q", end.Status, end.Reason, tc.status, tc.message)
			}
			// What the agent was answered is in its last words, which the
			// runner logs when it ends.
			var line string
			for l := range strings.SplitSeq(logs.String(), "\n") {
				if strings.Contains(l, "external agent ended") && strings.Contains(l, "run="+run+" ") {
					line = l
				}
			}
			if want := fmt.Sprintf("HTTP %d: ", tc.status); !strings.Contains(line, want) || !strings.Contains(line, tc.message) ||
				!strings.Contains(line, `\"type\":\"invalid_request_error\"`) {
				t.Errorf("the agent was not answered %s in its wire's shape with the provider's message %q: %.800s", want, tc.message, line)
			}
			if strings.Contains(logs.String(), antKey) || strings.Contains(logs.String(), oaiKey) {
				t.Errorf("a provider's API key is in the runner's log")
			}
		})
	}
}
