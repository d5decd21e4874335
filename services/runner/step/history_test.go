package step

import (
	"errors"
	"strings"
	"testing"

	"github.com/factline/factline/cases"
	"github.com/factline/factline/events"
)

func TestHistoryRebuildsTheConversation(t *testing.T) {
	var bodies []events.Body
	bodies = append(bodies, turnBodies(1, "looking", "c1", `{"ok":true,"output":"hello"}`, nil)...)
	bodies = append(bodies, events.StopDecided{Decision: events.StopDecision{DecisionID: "d1", Turn: 1, TaskGeneration: 1,
		Result: events.ContinueWith("cite the passing check", "tests")}})
	bodies = append(bodies, events.TaskGenerationStarted{Generation: 2, Instruction: "also update the README"})
	bodies = append(bodies, turnBodies(2, "again", "c1", `{"ok":true,"output":"hello"}`, nil)...)
	msgs, tokens, err := History(cases.DefaultSystemPrompt, "fix it", factsOf(t, bodies...), ContextPolicy{Mode: ContextFull})
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
	again, _, _ := History(cases.DefaultSystemPrompt, "fix it", factsOf(t, bodies...), ContextPolicy{Mode: ContextFull})
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
	msgs, _, err := History(cases.DefaultSystemPrompt, "fix it", factsOf(t, bodies...), ContextPolicy{Mode: ContextFull})
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
	win := ContextPolicy{Mode: ContextWindow, WindowTurns: 2}
	msgs, _, err := History(cases.DefaultSystemPrompt, "the instruction", facts, win)
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

	_, _, err = History(cases.DefaultSystemPrompt, "the instruction", facts, ContextPolicy{Mode: ContextWindow, WindowTurns: 2, MaxTokens: 50})
	var ce *ContextError
	if !errors.As(err, &ce) || ce.Budget != 50 {
		t.Fatalf("too small a budget: %v", err)
	}
	_, _, err = History(cases.DefaultSystemPrompt, "the instruction", facts, ContextPolicy{Mode: ContextFull, MaxTokens: 100})
	if !errors.As(err, &ce) {
		t.Fatalf("full history over budget must fail, got %v", err)
	}
	keep := ContextPolicy{Mode: ContextWindow, WindowTurns: 1, KeepTools: []string{"read_file"}}
	msgs, _, err = History(cases.DefaultSystemPrompt, "the instruction", facts, keep)
	if err != nil || countRole(msgs, RoleTool) != 6 {
		t.Fatalf("kept tools: %d tool messages, %v", countRole(msgs, RoleTool), err)
	}
}

func countRole(msgs []Message, r Role) int {
	n := 0
	for _, m := range msgs {
		if m.Role == r {
			n++
		}
	}
	return n
}

// The system message is the prompt the run was given, byte for byte, and
// only the first message: the same facts under another prompt differ in
// that message alone.
func TestHistoryOpensWithTheGivenSystemPrompt(t *testing.T) {
	facts := factsOf(t, turnBodies(1, "looking", "c1", `{"ok":true,"output":"hello"}`, nil)...)
	a, _, err := History(cases.DefaultSystemPrompt, "fix it", facts, ContextPolicy{Mode: ContextFull})
	if err != nil {
		t.Fatal(err)
	}
	b, _, err := History("Be terse. <b>&</b>\n", "fix it", facts, ContextPolicy{Mode: ContextFull})
	if err != nil {
		t.Fatal(err)
	}
	if a[0].Role != RoleSystem || a[0].Content != cases.DefaultSystemPrompt || b[0].Content != "Be terse. <b>&</b>\n" {
		t.Fatalf("system messages %q and %q", a[0].Content, b[0].Content)
	}
	if len(a) != len(b) {
		t.Fatalf("%d and %d messages", len(a), len(b))
	}
	for i := 1; i < len(a); i++ {
		if a[i].Content != b[i].Content || a[i].Role != b[i].Role {
			t.Fatalf("message %d differs: %+v and %+v", i, a[i], b[i])
		}
	}
}
