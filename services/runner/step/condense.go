package step

import (
	"fmt"
	"strings"

	"github.com/factline/factline/events"
)

// A summarise policy condenses the context before a turn: when its trigger
// fires, the turns between the first KeepFirst and the last KeepLast are
// summarised by a model, and the summary is committed (context.summarised)
// before the turn starts. What is due is decided here, from the facts
// alone; History then reads the committed summary. Nothing is summarised
// twice: a runner that takes the run over finds the summary in the log.

// ReasonContextBudget is the reason of a run whose context cannot fit its
// token bound even once summarised: it ends exhausted, never by dropping
// what the policy keeps.
const ReasonContextBudget = "context_budget"

// Condensation is a summary due before a turn: the turns it stands for
// and the summariser's request.
type Condensation struct {
	// From and Through are the first and last turn the summary stands for;
	// an earlier summary's turns are folded in, its From kept.
	From, Through uint32
	// Tokens is the estimated size of the context before the summary.
	Tokens int
	// Messages are the summariser's request: its prompt, then the text of
	// what it summarises (an earlier summary first).
	Messages []Message
}

// Condense decides whether a summary is due before the next turn, from the
// run's facts under a summarise policy. It is due when the trigger fires
// (the context, as History builds it now, passes TriggerTokens or the
// policy's MaxTokens, or more than TriggerTurns turns past the first
// KeepFirst are not summarised yet) and there is a turn to summarise that
// no committed summary covers: the turns past the first KeepFirst and
// before the last KeepLast. Otherwise it returns false, and History
// decides whether the context fits.
func Condense(system, instruction string, facts []events.Fact, policy ContextPolicy) (Condensation, bool) {
	s := policy.Summarise
	if policy.Mode != ContextSummarise || s == nil {
		return Condensation{}, false
	}
	c := collect(system, instruction, facts, policy)
	tokens := EstimateTokens(c.build(func(int) bool { return true }))
	open := 0
	for i, t := range c.turns {
		if i >= s.KeepFirst && !c.folded(t.turn) && (c.summary == nil || t.turn > c.summary.Through) {
			open++
		}
	}
	fire := (s.TriggerTokens > 0 && tokens > s.TriggerTokens) ||
		(policy.MaxTokens > 0 && tokens > policy.MaxTokens) ||
		(s.TriggerTurns > 0 && open > s.TriggerTurns)
	last := len(c.turns) - s.KeepLast
	if !fire || last <= s.KeepFirst {
		return Condensation{}, false
	}
	foldable := c.turns[s.KeepFirst:last]
	through := foldable[len(foldable)-1].turn
	if c.summary != nil && through <= c.summary.Through {
		return Condensation{}, false
	}
	from := foldable[0].turn
	var text strings.Builder
	if c.summary != nil {
		from = min(from, c.summary.From)
		text.WriteString(summaryMessage(*c.summary).Content)
		text.WriteString("\n\n")
	}
	for _, t := range foldable {
		if c.folded(t.turn) {
			continue
		}
		fmt.Fprintf(&text, "## turn %d\n", t.turn)
		for _, m := range append(append(append([]Message(nil), t.steer...), t.msgs...), t.feedback...) {
			writeMessage(&text, m)
		}
		text.WriteString("\n")
	}
	return Condensation{From: from, Through: through, Tokens: tokens, Messages: []Message{
		{Role: RoleSystem, Content: s.Prompt},
		{Role: RoleUser, Content: "The agent's task:\n" + instruction + "\n\nThe turns to summarise:\n\n" + text.String()},
	}}, true
}

// writeMessage renders one message of a turn as the summariser reads it.
func writeMessage(b *strings.Builder, m Message) {
	switch m.Role {
	case RoleTool:
		fmt.Fprintf(b, "tool result (%s): %s\n", m.ToolCallID, m.Content)
	default:
		if m.Content != "" {
			fmt.Fprintf(b, "%s: %s\n", m.Role, m.Content)
		}
	}
	for _, c := range m.ToolCalls {
		fmt.Fprintf(b, "%s called %s (%s) %s\n", m.Role, c.Name, c.ID, c.Args)
	}
}

// SummarySpend is what a run's summaries consumed, apart from its turns:
// the context cost a report shows on its own line.
func SummarySpend(facts []events.Fact) Spend {
	s := Spend{TokensKnown: true, CostKnown: true}
	for _, f := range facts {
		if b, ok := f.Body.(events.ContextSummarised); ok {
			s.charge(b.Usage, b.Reserve)
		}
	}
	return s
}
