package step

import (
	"testing"

	"github.com/factline/factline/events"
)

// factsOf builds a run's facts from bodies, as the runner would commit them.
func factsOf(t testing.TB, bodies ...events.Body) []events.Fact {
	t.Helper()
	var out []events.Fact
	gen := uint32(1)
	for i, b := range bodies {
		if g, ok := b.(events.TaskGenerationStarted); ok {
			gen = g.Generation
		}
		owner := b.Kind().Owner()
		f, err := events.NewFact(events.Meta{Suite: "s", Run: "r1", TaskGeneration: gen, Position: uint64(i + 1),
			Producer: events.Producer{Service: owner, Instance: "t"}}, b)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, f)
	}
	return out
}

func cost(v uint64) *uint64 { return &v }

func turnBodies(turn uint32, text string, call string, output string, usage *events.Usage) []events.Body {
	args := `{"path":"a.txt"}`
	d := events.DigestOf([]byte(args))
	return []events.Body{
		events.TurnStarted{Turn: turn, ContextDigest: d, Reserve: 3},
		events.ModelReplied{Turn: turn, Provider: "scripted", Text: text,
			Calls: []events.ToolCall{{ID: events.CallID(call), Name: "read_file", Args: args, ArgsDigest: d}}, Usage: usage},
		events.DispatchCompleted{Turn: turn, Output: output, Dispatch: events.CompletedDispatch{CallID: events.CallID(call),
			EvidenceRef: events.EvidenceRef("t" + string(rune('0'+turn)) + "/" + call), Disposition: events.DispositionExecuted,
			Mutation: events.MutationNotApplicable, Verification: events.NotVerifier()}},
	}
}
