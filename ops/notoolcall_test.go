package ops

import (
	"strings"
	"testing"

	"github.com/factline/factline/events"
)

func fact(t *testing.T, body events.Body) events.Fact {
	t.Helper()
	f, err := events.NewFact(events.Meta{Suite: "s", Run: "r", TaskGeneration: 1, Position: 3,
		Producer: events.Producer{Service: events.OwnerRunner, Instance: "r1"}}, body)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// A reply with no tool call says so on its line, and so does the turn it
// completed (read as a proposal to finish, with no evidence); a reply
// with calls names them.
func TestAReplyWithNoToolCallSaysSo(t *testing.T) {
	const said = "the model made no tool call"
	quiet := Summary(fact(t, events.ModelReplied{Turn: 2, Provider: "openai", Text: "All done."}))
	if !strings.Contains(quiet, said) {
		t.Errorf("a reply with no call renders %q", quiet)
	}
	busy := Summary(fact(t, events.ModelReplied{Turn: 2, Provider: "openai",
		Calls: []events.ToolCall{{ID: "c1", Name: "read_file", Args: "{}", ArgsDigest: events.DigestOf([]byte("{}"))}}}))
	if strings.Contains(busy, said) || !strings.Contains(busy, "calls=[read_file]") {
		t.Errorf("a reply with a call renders %q", busy)
	}
	done := Summary(fact(t, events.TurnCompleted{Evidence: events.RunEvidence{RunID: "r", TaskGeneration: 1, Turn: 2,
		EvidencePosition: 4, ActorIntent: events.ProposeDone()}}))
	if !strings.Contains(done, said) || !strings.Contains(done, "intent=propose_done") {
		t.Errorf("a turn with no call completed renders %q", done)
	}
	worked := Summary(fact(t, events.TurnCompleted{Evidence: events.RunEvidence{RunID: "r", TaskGeneration: 1, Turn: 2,
		EvidencePosition: 4, ActorIntent: events.Continue(), Dispatches: []events.CompletedDispatch{{CallID: "c1", EvidenceRef: "t2/c1",
			Disposition: events.DispositionExecuted, Mutation: events.MutationNotApplicable, Verification: events.NotRun()}}}}))
	if strings.Contains(worked, said) {
		t.Errorf("a turn with a dispatch renders %q", worked)
	}
}

// An external agent's turn that called the agent's own tools holds no
// dispatches and continues: its line does not say the model made no tool
// call (it made some; the agent ran them).
func TestAnExternalAgentsToolTurnDoesNotSayNoToolCall(t *testing.T) {
	line := Summary(fact(t, events.TurnCompleted{Evidence: events.RunEvidence{RunID: "r", TaskGeneration: 1, Turn: 1,
		EvidencePosition: 4, ActorIntent: events.Continue()}}))
	if strings.Contains(line, NoToolCall) || !strings.Contains(line, "dispatches=0") {
		t.Fatalf("an external agent's turn with calls renders %q", line)
	}
}
