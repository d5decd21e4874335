package runner_test

import (
	"strings"
	"testing"

	"github.com/factline/factline/bus"
	"github.com/factline/factline/events"
	"github.com/factline/factline/services/runner"
)

// turnFacts counts a run's turn.started, model.replied and
// turn.completed.
func turnFacts(log bus.RunLog) (started, replied, completed int) {
	for _, f := range log.Facts() {
		switch f.Body.(type) {
		case events.TurnStarted:
			started++
		case events.ModelReplied:
			replied++
		case events.TurnCompleted:
			completed++
		}
	}
	return started, replied, completed
}

// An agent whose history a provider would refuse (its tool messages name
// calls no reply made) is refused 400 without a turn, and when it gives
// up the run ends agent_exited with its exit status and the refusal that
// made it give up, so that the report says why. The old endpoint answered
// the broken history, recorded it as a turn, and the run went on as if
// nothing were wrong (against a real provider it ended errored,
// model_error).
func TestExternalAgentGivingUpOnARefusedRequestEndsExitedSayingWhy(t *testing.T) {
	t.Parallel()
	e, _ := startWith(t)
	bin := buildAgent(t)
	log, end := e.runAgent(fixtureCase(t, "{steps: 10}"), agentTreatment(t, fixScript, bin, "--misanswer", "{{.Instruction}}"), "ext-misanswer")
	if started, replied, completed := turnFacts(log); started != 1 || replied != 1 || completed != 1 {
		t.Fatalf("turns started %d, replied %d, completed %d; want 1 each: the refused request is no turn", started, replied, completed)
	}
	t.Logf("ended %s (%s)", end.Status, end.Reason)
	// system, user, the assistant's calls, then the first tool message.
	if end.Status != events.RunIncomplete || !strings.HasPrefix(end.Reason, runner.ReasonAgentExited+": exit status 3") ||
		!strings.Contains(end.Reason, "messages[3].tool_call_id") {
		t.Fatalf("ended %s (%s), want incomplete %s: exit status 3, naming the refused messages[3].tool_call_id", end.Status, end.Reason, runner.ReasonAgentExited)
	}
}

// An agent that sends a refused request again and again, never mending
// it, is ended after runner.MaxRefusedInARow refusals in a row: its
// refusals are no turns, so no step or token budget would ever end it,
// and without a wall budget the run would never end. The run ends
// incomplete, agent_refused, naming the last refusal. (The wall budget
// here only bounds the test on the old runner.) Each refusal counts in
// factline_agent_requests_refused_total, an operator's one sign of an
// agent whose requests never become turns.
func TestExternalAgentRetryingARefusedRequestIsEnded(t *testing.T) {
	t.Parallel()
	e, _ := startWith(t)
	bin := buildAgent(t)
	before := counterTotal(t, "factline_agent_requests_refused_total")
	log, end := e.runAgent(fixtureCase(t, "{steps: 10, wall: 120s}"),
		agentTreatment(t, fixScript, bin, "--misanswer", "--retries", "100000", "{{.Instruction}}"), "ext-retrier")
	if started, replied, completed := turnFacts(log); started != 1 || replied != 1 || completed != 1 {
		t.Fatalf("turns started %d, replied %d, completed %d; want 1 each: no refused request is a turn", started, replied, completed)
	}
	t.Logf("ended %s (%s)", end.Status, end.Reason)
	if end.Status != events.RunIncomplete || !strings.HasPrefix(end.Reason, runner.ReasonAgentRefused+": ") ||
		!strings.Contains(end.Reason, "messages[3].tool_call_id") {
		t.Fatalf("ended %s (%s), want incomplete %s naming the refused messages[3].tool_call_id", end.Status, end.Reason, runner.ReasonAgentRefused)
	}
	if n := counterTotal(t, "factline_agent_requests_refused_total") - before; n < runner.MaxRefusedInARow {
		t.Fatalf("factline_agent_requests_refused_total rose by %v, want at least %d", n, runner.MaxRefusedInARow)
	}
}
