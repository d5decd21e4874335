package runner

import (
	"errors"
	"strings"
	"testing"

	"github.com/factline/factline/cases"
	"github.com/factline/factline/events"
	"github.com/factline/factline/models"
)

// factsOf builds a run's facts from bodies, as the runner would commit them.
func factsOf(t *testing.T, bodies ...events.Body) []events.Fact {
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

func TestHistoryRebuildsTheConversation(t *testing.T) {
	var bodies []events.Body
	bodies = append(bodies, turnBodies(1, "looking", "c1", `{"ok":true,"output":"hello"}`, nil)...)
	bodies = append(bodies, events.StopDecided{Decision: events.StopDecision{DecisionID: "d1", Turn: 1, TaskGeneration: 1,
		Result: events.ContinueWith("cite the passing check", "tests")}})
	bodies = append(bodies, events.TaskGenerationStarted{Generation: 2, Instruction: "also update the README"})
	bodies = append(bodies, turnBodies(2, "again", "c1", `{"ok":true,"output":"hello"}`, nil)...)
	msgs, tokens, err := History("fix it", factsOf(t, bodies...), cases.ContextPolicy{Mode: cases.ContextFull})
	if err != nil {
		t.Fatal(err)
	}
	var roles []string
	for _, m := range msgs {
		roles = append(roles, string(m.Role))
	}
	want := "system user assistant tool user user assistant tool"
	if got := strings.Join(roles, " "); got != want {
		t.Fatalf("roles %q, want %q", got, want)
	}
	if msgs[1].Content != "fix it" || !strings.Contains(msgs[4].Content, "cite the passing check") ||
		!strings.Contains(msgs[5].Content, "also update the README") || !strings.Contains(msgs[3].Content, "[evidence t1/c1]") {
		t.Fatalf("contents: %+v", msgs)
	}
	if msgs[2].ToolCalls[0].ID != "c1" || msgs[3].ToolCallID != "c1" {
		t.Fatal("tool messages must answer their calls")
	}
	if tokens <= 0 {
		t.Fatal("no token estimate")
	}
	again, _, _ := History("fix it", factsOf(t, bodies...), cases.ContextPolicy{Mode: cases.ContextFull})
	if len(again) != len(msgs) {
		t.Fatal("history is not deterministic")
	}
}

// A steer taken in while a turn ran (the model was answering) comes after
// that turn in the context: the model did not see it when it replied.
func TestHistoryPlacesAMidTurnSteerAfterItsTurn(t *testing.T) {
	t1 := turnBodies(1, "looking", "c1", `{"ok":true,"output":"hello"}`, nil)
	bodies := []events.Body{t1[0],
		events.ControlAccepted{Control: events.ControlRef{ID: "s1", Signal: events.SignalSteer}, Instruction: "also update the README"},
		events.TaskGenerationStarted{Generation: 2, Instruction: "also update the README"},
		t1[1], t1[2]}
	bodies = append(bodies, turnBodies(2, "again", "c1", `{"ok":true,"output":"hello"}`, nil)...)
	msgs, _, err := History("fix it", factsOf(t, bodies...), cases.ContextPolicy{Mode: cases.ContextFull})
	if err != nil {
		t.Fatal(err)
	}
	var roles []string
	for _, m := range msgs {
		roles = append(roles, string(m.Role))
	}
	if got, want := strings.Join(roles, " "), "system user assistant tool user assistant tool"; got != want {
		t.Fatalf("roles %q, want %q", got, want)
	}
	if msgs[2].Content != "looking" || !strings.Contains(msgs[4].Content, "also update the README") {
		t.Fatalf("the steer is not between turn 1 and turn 2: %+v", msgs)
	}
}

// A window keeps the instruction, every steer, kept tools and the last
// turns; a budget too small for what must stay fails visibly.
func TestHistoryWindowKeepsWhatMustStay(t *testing.T) {
	var bodies []events.Body
	for turn := uint32(1); turn <= 6; turn++ {
		if turn == 3 {
			bodies = append(bodies, events.TaskGenerationStarted{Generation: 2, Instruction: "steer: use the new API"})
		}
		bodies = append(bodies, turnBodies(turn, "turn text", "c1", strings.Repeat("x", 400), nil)...)
	}
	facts := factsOf(t, bodies...)
	win := cases.ContextPolicy{Mode: cases.ContextWindow, WindowTurns: 2}
	msgs, _, err := History("the instruction", facts, win)
	if err != nil {
		t.Fatal(err)
	}
	all := ""
	for _, m := range msgs {
		all += m.Content + "\n"
	}
	if !strings.Contains(all, "the instruction") || !strings.Contains(all, "steer: use the new API") {
		t.Fatal("window dropped the instruction or a steer")
	}
	// Turns 3 (after the steer), 5 and 6 stay; 1, 2 and 4 go.
	if n := strings.Count(all, "[evidence"); n != 3 {
		t.Fatalf("window kept %d turns' observations, want 3:\n%s", n, all)
	}

	_, _, err = History("the instruction", facts, cases.ContextPolicy{Mode: cases.ContextWindow, WindowTurns: 2, MaxTokens: 50})
	var ce *ContextError
	if !errors.As(err, &ce) || ce.Budget != 50 {
		t.Fatalf("too small a budget: %v", err)
	}
	_, _, err = History("the instruction", facts, cases.ContextPolicy{Mode: cases.ContextFull, MaxTokens: 100})
	if !errors.As(err, &ce) {
		t.Fatalf("full history over budget must fail, got %v", err)
	}
	keep := cases.ContextPolicy{Mode: cases.ContextWindow, WindowTurns: 1, KeepTools: []string{"read_file"}}
	msgs, _, err = History("the instruction", facts, keep)
	if err != nil || countRole(msgs, models.RoleTool) != 6 {
		t.Fatalf("kept tools: %d tool messages, %v", countRole(msgs, models.RoleTool), err)
	}
}

func countRole(msgs []models.Message, r models.Role) int {
	n := 0
	for _, m := range msgs {
		if m.Role == r {
			n++
		}
	}
	return n
}

func TestDiagnostics(t *testing.T) {
	rule := &cases.DiagnosticRule{Pattern: `^(?P<file>[^:]+):(?P<line>\d+): (?P<message>.*)$`, Complete: true}
	ch := cases.Check{ID: "tests", Diagnostics: rule}
	v := verificationOf(ch, 1, "calc.go:3: want 2, got 0\ncalc.go:9: undefined: Sub\nFAIL\n", false, 4)
	f, ok := v.Variant().(events.VerifyFailed)
	if !ok || f.SourceEpoch != 4 || !f.Complete || len(f.Diagnostics) != 2 || f.Diagnostics[1].Line != 9 || f.Diagnostics[0].File != "calc.go" {
		t.Fatalf("failed verification %+v", v.Variant())
	}
	if f := verificationOf(ch, 1, "x\n", true, 4).Variant().(events.VerifyFailed); f.Complete {
		t.Fatal("cut output cannot give a complete set")
	}
	if f := verificationOf(cases.Check{ID: "t"}, 2, "boom\n", false, 1).Variant().(events.VerifyFailed); f.Complete || f.Diagnostics[0].Message != "boom" {
		t.Fatalf("no rule: %+v", f)
	}
	if _, ok := verificationOf(ch, 0, "", false, 2).Variant().(events.VerifyPassed); !ok {
		t.Fatal("exit 0 is a pass")
	}
}
