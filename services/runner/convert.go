package runner

// The runner's core (package step) owns its types, and the conversions
// between them and the case's and the model port's are here, each
// checked by a Test*ConversionIsLossless test.

import (
	"github.com/factline/factline/cases"
	"github.com/factline/factline/events"
	"github.com/factline/factline/models"
	"github.com/factline/factline/services/runner/step"
)

// budgetOf is the part of a case's budget the core enforces; the wall-time
// limit stays here, with the clock.
func budgetOf(b cases.Budget) step.Budget {
	return step.Budget{Steps: b.Steps, InputTokens: b.InputTokens, OutputTokens: b.OutputTokens, Cost: b.Cost}
}

// history is the model-visible context of a run under a context policy,
// opened by its system prompt: the core builds it from the facts, and it is converted into the model
// port's messages without loss (the rendered request's digest depends on
// every field).
func history(system, instruction string, facts []events.Fact, policy cases.ContextPolicy) ([]models.Message, int, error) {
	// A conversion, not a copy by hand: a field added to the case's policy
	// and not to the core's stops the build.
	msgs, tokens, err := step.History(system, instruction, facts, step.ContextPolicy(policy))
	return messagesOf(msgs), tokens, err
}

// messagesOf converts the core's messages into the model port's, keeping
// nil apart from empty.
func messagesOf(msgs []step.Message) []models.Message {
	if msgs == nil {
		return nil
	}
	out := make([]models.Message, len(msgs))
	for i, m := range msgs {
		out[i] = models.Message{Role: models.Role(m.Role), Content: m.Content, ToolCallID: m.ToolCallID}
		if m.ToolCalls != nil {
			out[i].ToolCalls = make([]models.ToolCall, len(m.ToolCalls))
			for j, c := range m.ToolCalls {
				out[i].ToolCalls[j] = models.ToolCall(c)
			}
		}
	}
	return out
}

// ruleOf is a check's diagnostic rule as the core reads it (nil: none). A
// pointer conversion, not a copy by hand: a field added to the case's rule
// and not to the core's stops the build.
func ruleOf(r *cases.DiagnosticRule) *step.DiagnosticRule { return (*step.DiagnosticRule)(r) }
