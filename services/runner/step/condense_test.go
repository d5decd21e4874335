package step

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/factline/factline/events"
)

// turnsOf is n turns of a run, turn k reading "value k".
func turnsOf(n int) []events.Body {
	var out []events.Body
	for k := 1; k <= n; k++ {
		out = append(out, turnBodies(uint32(k), fmt.Sprintf("reading %d", k), "c1",
			fmt.Sprintf(`{"ok":true,"output":"value %d"}`, k), &events.Usage{InputTokens: 10, OutputTokens: 1, Cost: cost(1)})...)
	}
	return out
}

func summarising(trigger Summarise) ContextPolicy {
	if trigger.Prompt == "" {
		trigger.Prompt = "summarise"
	}
	return ContextPolicy{Mode: ContextSummarise, Summarise: &trigger}
}

func summaryOf(c Condensation, turn uint32, text string) events.ContextSummarised {
	return events.ContextSummarised{Turn: turn, From: c.From, Through: c.Through, Summary: text,
		RequestDigest: events.DigestOf([]byte(text)), Provider: "scripted", Reserve: 2,
		Usage: &events.Usage{InputTokens: 50, OutputTokens: 5, Cost: cost(2)}}
}

func TestASummaryIsDueOnlyOnceTheTriggerFires(t *testing.T) {
	policy := summarising(Summarise{TriggerTurns: 3, KeepFirst: 1, KeepLast: 1})
	if _, due := Condense("sys", "fix it", factsOf(t, turnsOf(4)...), policy); due {
		t.Fatal("3 open turns past the first, trigger 3: due already")
	}
	c, due := Condense("sys", "fix it", factsOf(t, turnsOf(5)...), policy)
	if !due || c.From != 2 || c.Through != 4 {
		t.Fatalf("5 turns, keep first 1 and last 1: due %v, turns %d-%d, want 2-4", due, c.From, c.Through)
	}
	tokens := summarising(Summarise{TriggerTokens: 1, KeepLast: 1})
	if c, due := Condense("sys", "fix it", factsOf(t, turnsOf(2)...), tokens); !due || c.From != 1 || c.Through != 1 {
		t.Fatalf("a token trigger passed: due %v, turns %d-%d", due, c.From, c.Through)
	}
	for _, p := range []ContextPolicy{{Mode: ContextFull}, {Mode: ContextWindow, WindowTurns: 1}} {
		if _, due := Condense("sys", "fix it", factsOf(t, turnsOf(9)...), p); due {
			t.Fatalf("mode %s summarised", p.Mode)
		}
	}
}

// An early fact the agent still needs survives through the summary: the
// summariser is sent it, and the history holds the summary that keeps it
// where the turn was, the first and last turns verbatim.
func TestAnEarlyFactSurvivesThroughTheSummary(t *testing.T) {
	policy := summarising(Summarise{TriggerTurns: 2, KeepFirst: 1, KeepLast: 1})
	bodies := turnsOf(4)
	c, due := Condense("sys", "fix it", factsOf(t, bodies...), policy)
	if !due || !strings.Contains(c.Messages[1].Content, "value 2") || strings.Contains(c.Messages[1].Content, "value 4") ||
		c.Messages[0].Content != "summarise" {
		t.Fatalf("the summariser's request: due %v %+v", due, c.Messages)
	}
	bodies = append(bodies, summaryOf(c, 5, "turn 2 read value 2"))
	msgs, _, err := History("sys", "fix it", factsOf(t, bodies...), policy)
	if err != nil {
		t.Fatal(err)
	}
	all := fmt.Sprint(msgs)
	if !strings.Contains(all, "[summary of turns 2-3] turn 2 read value 2") || !strings.Contains(all, "value 1") ||
		!strings.Contains(all, "value 4") || strings.Contains(all, "value 3") {
		t.Fatalf("history: %v", all)
	}
	if msgs[2].Role != RoleAssistant || msgs[4].Role != RoleUser || !strings.HasPrefix(msgs[4].Content, "[summary") {
		t.Fatalf("the summary is not where its turns were: %+v", msgs)
	}
}

// A committed summary is never asked for again: the facts say it is there,
// so a runner that takes the run over builds the same history.
func TestASummaryIsNotDueAgainForTheSameTurns(t *testing.T) {
	policy := summarising(Summarise{TriggerTokens: 1, KeepLast: 1})
	bodies := turnsOf(3)
	c, _ := Condense("sys", "fix it", factsOf(t, bodies...), policy)
	bodies = append(bodies, summaryOf(c, 4, "so far"))
	if again, due := Condense("sys", "fix it", factsOf(t, bodies...), policy); due {
		t.Fatalf("due again after its commit: %+v", again)
	}
	// A later turn makes another due, which folds the first summary in.
	bodies = append(bodies, turnsOf(5)[len(turnsOf(3)):]...)
	next, due := Condense("sys", "fix it", factsOf(t, bodies...), policy)
	if !due || next.From != 1 || next.Through != 4 || !strings.Contains(next.Messages[1].Content, "[summary of turns 1-2] so far") {
		t.Fatalf("the next summary: due %v %+v", due, next)
	}
}

// Steers stay verbatim even where their turn is summarised.
func TestASummaryKeepsSteers(t *testing.T) {
	policy := summarising(Summarise{TriggerTurns: 1, KeepLast: 1})
	bodies := append([]events.Body{}, turnsOf(1)...)
	bodies = append(bodies, events.TaskGenerationStarted{Generation: 2, Instruction: "also the README"})
	bodies = append(bodies, turnsOf(3)[3:]...)
	c, due := Condense("sys", "fix it", factsOf(t, bodies...), policy)
	if !due || c.Through != 2 {
		t.Fatalf("due %v %+v", due, c)
	}
	bodies = append(bodies, summaryOf(c, 4, "s"))
	msgs, _, err := History("sys", "fix it", factsOf(t, bodies...), policy)
	if err != nil || !strings.Contains(fmt.Sprint(msgs), "also the README") {
		t.Fatalf("%v %+v", err, msgs)
	}
}

// A context that does not fit even once summarised ends the run, never by
// dropping what the policy keeps: nothing is left to summarise, and the
// history fails with the summarise policy's context error.
func TestAContextTooLargeEvenSummarisedFails(t *testing.T) {
	policy := summarising(Summarise{KeepLast: 1})
	policy.MaxTokens = 30
	bodies := turnsOf(3)
	c, due := Condense("sys", "fix it", factsOf(t, bodies...), policy)
	if !due {
		t.Fatal("over max_tokens: no summary due")
	}
	bodies = append(bodies, summaryOf(c, 4, strings.Repeat("long ", 40)))
	if _, due := Condense("sys", "fix it", factsOf(t, bodies...), policy); due {
		t.Fatal("nothing left to summarise, yet a summary is due")
	}
	_, need, err := History("sys", "fix it", factsOf(t, bodies...), policy)
	var ce *ContextError
	if !errors.As(err, &ce) || ce.Mode != ContextSummarise || ce.Budget != 30 || ce.Need != need {
		t.Fatalf("got %v", err)
	}
}

// A summary is a model call of the run: charged to its budget (not as a
// step), and apart as context spend.
func TestASummaryIsChargedToTheRun(t *testing.T) {
	policy := summarising(Summarise{TriggerTokens: 1, KeepLast: 1})
	bodies := turnsOf(2)
	c, _ := Condense("sys", "fix it", factsOf(t, bodies...), policy)
	bodies = append(bodies, summaryOf(c, 3, "s"), events.ContextSummarised{Turn: 3, From: 1, Through: 1, Summary: "s",
		RequestDigest: events.DigestOf([]byte("x")), Provider: "scripted", Reserve: 7})
	s := Tally(factsOf(t, bodies...))
	if s.Steps != 2 || s.InputTokens != 70 || s.Charged != 2+2+7 || s.CostKnown || s.TokensKnown {
		t.Fatalf("tally %+v", s)
	}
	ctx := SummarySpend(factsOf(t, bodies...))
	if ctx.InputTokens != 50 || ctx.OutputTokens != 5 || ctx.Charged != 9 || ctx.Steps != 0 {
		t.Fatalf("context spend %+v", ctx)
	}
}
