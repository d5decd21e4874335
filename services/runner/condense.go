package runner

import (
	"context"
	"fmt"

	"github.com/factline/factline/events"
	"github.com/factline/factline/models"
	"github.com/factline/factline/services/runner/step"
)

// condense carries out a summary the context policy wants before a turn
// (step.Condense decides it from the facts): the summariser is asked, its
// request stored as a blob, and the summary committed as
// context.summarised before the turn starts, so that the turn's history,
// and any takeover's, is built from the log. It reports whether it
// committed one; the caller then reads the log again. A budget that cannot
// pay for the call ends the run exhausted, as a turn's would.
func (a *attempt) condense(ctx context.Context, facts []events.Fact, turn uint32) (bool, step.Ending, error) {
	c, due := step.Condense(a.system, a.kase.Instruction, facts, contextOf(a.eff.Context))
	if !due {
		return false, step.Ending{}, nil
	}
	settings := a.settings()
	if m := a.eff.Context.Summarise.Model; m != "" {
		settings.Model = m
	}
	// The summary serves the turn about to start: a scripted model answers
	// it from that turn's script (a branch matching the summariser's
	// request).
	req := models.Request{Messages: messagesOf(c.Messages), Settings: settings, Turn: int(turn)}
	reserve := a.model.Reserve(req)
	if reason := step.Preflight(budgetOf(a.kase.Budget), step.Tally(facts), reserve); reason != "" {
		return false, step.Exhausted(reason), nil
	}
	body, err := a.model.Render(req)
	if err != nil {
		return false, step.Ending{}, fmt.Errorf("render summary request: %w", err)
	}
	// Stored before the call: a summary whose request is not kept would be
	// a model call nobody can audit.
	if _, err := a.svc.bus.Blobs().PutAfter(ctx, body, nil); err != nil {
		return false, step.Ending{}, fmt.Errorf("store summary request: %w", err)
	}
	a.status("summarise", map[string]any{"turn": turn, "from": c.From, "through": c.Through})
	reply, err := a.callModel(ctx, req)
	if err != nil && ctx.Err() == nil && a.kase.Budget.Wall > 0 && a.wallUsed() >= a.kase.Budget.Wall.Std() {
		return false, step.Exhausted(step.ReasonWallLimit), nil
	}
	if err != nil {
		if sig := a.ctl.pendingCancel(); sig != nil {
			end, err := a.acceptCancel(ctx, sig)
			return false, end, err
		}
		if end := modelEnding(err); end.Ends() {
			return false, end, nil
		}
		return false, step.Ending{}, fmt.Errorf("summary before turn %d: %w", turn, err)
	}
	reply = redactReply(a.svc.secrets, reply)
	replied := repliedFact(turn, a.model.Provider(), reply)
	summary := events.ContextSummarised{
		Turn: turn, From: c.From, Through: c.Through, Summary: reply.Text, RequestDigest: events.DigestOf(body),
		Provider: replied.Provider, Model: replied.Model, Usage: replied.Usage, Reserve: reserve, Tokens: uint64(c.Tokens),
	}
	size, err := a.factSize(summary)
	if err != nil {
		return false, step.Ending{}, err
	}
	if room := a.svc.bus.FactRoom(); size > room {
		// A summary larger than one message holds does not condense
		// anything a context can carry: the context budget ran out, as
		// when what is left once summarised does not fit.
		return false, step.Exhausted(fmt.Sprintf("%s: the summary of turns %d-%d is %d bytes, more than a fact holds (%d)",
			step.ReasonContextBudget, c.From, c.Through, len(reply.Text), room)), nil
	}
	_, err = a.commit(ctx, key(turn, c.Through), summary)
	return err == nil, step.Ending{}, err
}
