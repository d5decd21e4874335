package runner_test

import (
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/factline/factline/events"
)

// tokenPattern matches an attempt's endpoint token (agentproxy: "fl-" and
// 32 random bytes in hex).
var tokenPattern = regexp.MustCompile(`fl-[0-9a-f]{64}`)

// The attempt's endpoint token is a secret while the attempt runs: an
// agent whose tool prints it sends it back in its next request, and
// neither that request as stored and sent to the model, nor any fact, nor
// any log line holds it; the redaction marker stands in its place.
func TestExternalAgentTokenIsRedacted(t *testing.T) {
	t.Parallel()
	e, logs := startWith(t)
	bin := buildAgent(t)
	c := fixtureCase(t, "{steps: 10}")
	script := `turns:
  - calls:
      - {name: run_command, args: {command: "echo key=$OPENAI_API_KEY"}}
    usage: {input_tokens: 100, output_tokens: 10}
  - text: I saw the key.
    usage: {input_tokens: 140, output_tokens: 9}
`
	log, end := e.runAgent(c, agentTreatment(t, script, bin, "{{.Instruction}}"), "ext-token")
	if end.Status != events.RunDone {
		t.Fatalf("ended %s (%s), want done", end.Status, end.Reason)
	}
	var second *events.TurnStarted
	for _, f := range log.Facts() {
		if m := tokenPattern.FindString(fmt.Sprintf("%+v", f.Body)); m != "" {
			t.Errorf("fact %s holds the token %s", f.Kind(), m)
		}
		if ts, ok := f.Body.(events.TurnStarted); ok && ts.Turn == 2 {
			second = &ts
		}
	}
	if second == nil {
		t.Fatal("no second turn")
	}
	body, err := e.b.Blobs().Get(e.ctx, second.ContextDigest)
	must(t, err)
	if m := tokenPattern.FindString(string(body)); m != "" {
		t.Errorf("turn 2's stored request holds the token %s", m)
	}
	if !strings.Contains(string(body), "key=[redacted:") {
		t.Errorf("turn 2's stored request lacks the redacted key the agent's tool printed: %s", body)
	}
	if m := tokenPattern.FindString(logs.String()); m != "" {
		t.Errorf("the runner's log holds the token %s", m)
	}
}
