package projections_test

import (
	"testing"

	"github.com/factline/factline/events"
	"github.com/factline/factline/projections"
)

// An external agent builds its own context: the stop decider's feedback on
// its turn is never sent to it, so the history (and the viewer's "harness
// feedback carried into the next turn") holds none for that turn, while
// the built-in loop's turn keeps the feedback its next request carries.
// Found running Crush: its title call's answer was shown as followed by
// "Not done yet: …" carried into a next turn whose request held no such
// message.
func TestHistoryCarriesNoFeedbackIntoAnExternalAgentsNextTurn(t *testing.T) {
	d := events.DigestOf([]byte("request"))
	h := projections.HistoryFold.Init()
	for _, f := range []events.Fact{
		fact(t, "agent", 1, events.OwnerRunner, events.TurnStarted{Turn: 1, ContextDigest: d, Messages: 2, Policy: events.ContextPolicyAgent}),
		fact(t, "agent", 2, events.OwnerRunner, events.ModelReplied{Turn: 1, Provider: "p", Text: "Make check.sh pass"}),
		fact(t, "agent", 3, events.OwnerDecider, events.StopDecided{Decision: events.StopDecision{DecisionID: "d1", Turn: 1, TaskGeneration: 1,
			Result: events.ContinueWith("Not done yet: run check", "check")}}),
		fact(t, "builtin", 1, events.OwnerRunner, events.TurnStarted{Turn: 1, ContextDigest: d, Messages: 2}),
		fact(t, "builtin", 2, events.OwnerRunner, events.ModelReplied{Turn: 1, Provider: "p", Text: "done"}),
		fact(t, "builtin", 3, events.OwnerDecider, events.StopDecided{Decision: events.StopDecision{DecisionID: "d1", Turn: 1, TaskGeneration: 1,
			Result: events.ContinueWith("Not done yet: run check", "check")}}),
	} {
		h = projections.HistoryFold.Apply(h, f)
	}
	if x := h["s/agent"][0]; len(x.Feedback) != 0 {
		t.Errorf("external agent's turn: feedback %q carried into its next turn; its requests never hold it", x.Feedback)
	}
	if x := h["s/builtin"][0]; len(x.Feedback) != 1 || x.Feedback[0] != "Not done yet: run check" {
		t.Errorf("built-in loop's turn: feedback %q, want the decider's", x.Feedback)
	}
}
