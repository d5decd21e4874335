package runner

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/factline/factline/events"
	"github.com/factline/factline/ops/metrics"
	"github.com/factline/factline/services/runner/extensions"
	"github.com/factline/factline/services/runner/step"
	"github.com/factline/factline/services/runner/tools"
)

// maxSends bounds how often one operation is sent: the first send, and
// sends again under the same operation ID once its outcome was found not
// applied or its sink deduplicates by key.
const maxSends = 3

// effect is one call of an external effect being settled.
type effect struct {
	turn uint32
	call events.ToolCall
	in   events.DispatchIntended
	tool tools.Tool // nil: the tool is no longer offered (it cannot be sent)
	args json.RawMessage
	// known is what is known of earlier sends whose answer was lost, for
	// the observation and the handoff.
	known []string
	sends int
	// quiet is when no send of the operation can still be on its way to
	// the sink: the end of this attempt's last send, or, for one an
	// earlier attempt may have sent, the attempt's start and the tool's
	// timeout (see lookupSettled).
	quiet time.Time
}

// finding is what reconciling an operation of unknown outcome found.
type finding int

const (
	findingUnknown    finding = iota // nothing could tell
	findingApplied                   // it took effect
	findingNotApplied                // it did not: it may be sent again
	findingResend                    // the sink deduplicates: send again under the same key
)

// settleEffect sends an external call and settles it with the outcome the
// sink's answer shows. An answer lost after the request may have reached
// the sink (a timeout, a reset connection, a cancel while in flight) is an
// unknown outcome, and nothing else of the run happens until it is
// reconciled under the same operation ID: the status lookup the case
// declares, a send again only where the sink deduplicates by key, or a
// person's finding. The model is told the outcome only once it is known;
// when nothing can tell, the call is settled unknown and the run ends for
// a person. mayHaveRun says an earlier attempt may have sent it already (a
// takeover found it intended and never settled).
func (a *attempt) settleEffect(ctx context.Context, e effect, mayHaveRun bool) (events.CompletedDispatch, *ending, error) {
	d := events.CompletedDispatch{CallID: e.call.ID, EvidenceRef: step.EvidenceRef(e.turn, e.call.ID), Tool: e.call.Name,
		Disposition: events.DispositionExecuted, Mutation: events.MutationNotApplicable, Verification: events.NotVerifier()}
	if mayHaveRun {
		// Whoever sent it earlier did so before this attempt began (a
		// runner's send starts within its hold, which ended before this
		// attempt's delivery), and gave up on it within the tool's timeout.
		e.quiet = a.began.Add(a.inFlight(e.in.Tool))
	}
	for {
		if mayHaveRun {
			f, note, err := a.reconcile(ctx, &e)
			if err != nil {
				return d, nil, err
			}
			e.known = append(e.known, note)
			switch {
			case f == findingApplied:
				d.Digest, d.Outcome = a.ws.Digest(), events.OutcomeApplied
				return d, nil, a.settle(ctx, e.turn, d, tools.Result{Output: e.describe(fmt.Sprintf("operation %s took effect; it was not sent again", e.in.OperationID))})
			case f == findingUnknown || e.tool == nil || e.sends >= maxSends || a.ctl.pendingCancel() != nil:
				return a.settleUnknown(ctx, e, d, f == findingNotApplied)
			}
		}
		if err := sendBackoff(ctx, e.sends); err != nil {
			return d, nil, err
		}
		// Nothing is sent, the first time or again, unless the run is
		// still this attempt's and stays so until the send has left.
		if err := a.fence(ctx); err != nil {
			return d, nil, err
		}
		res, interrupted := a.send(ctx, &e)
		if res.Outcome == events.OutcomeUnknown {
			e.quiet = time.Now()
		}
		var err error
		d.Mutation, err = a.mutation(ctx, e.tool.Contract(), res)
		if _, past := workspaceLimit(err); past {
			// Whatever the effect did outside, its writes into the
			// workspace past the limit were undone.
			d.Mutation, err = events.MutationNotApplied, nil
		}
		if err != nil {
			return d, nil, fmt.Errorf("workspace after %s: %w", e.call.Name, err)
		}
		if res.Outcome != events.OutcomeUnknown {
			d.Digest, d.Outcome = a.ws.Digest(), res.Outcome
			if res.Outcome == "" {
				d.Outcome = events.OutcomeApplied
				if res.Err != nil {
					d.Outcome = events.OutcomeNotApplied
				}
			}
			if len(e.known) > 0 && res.Err == nil {
				res.Output = e.describe("sent again under the same operation ID, it took effect; the endpoint answered:\n" + res.Output)
			}
			return d, nil, a.settle(ctx, e.turn, d, res)
		}
		e.known = append(e.known, res.Err.Message)
		if interrupted {
			// A cancel or the wall-time budget stopped the call in flight:
			// that is no proof the effect was stopped. Only a look (no
			// effect) may still settle it; the run then ends either way.
			d.Disposition = events.DispositionCanceled
			f, note, err := a.lookupSettled(ctx, e.in.OperationID, e.quiet)
			if err != nil {
				return d, nil, err
			}
			if f == findingApplied || f == findingNotApplied {
				e.known = append(e.known, note)
				d.Digest, d.Outcome = a.ws.Digest(), events.OutcomeApplied
				if f == findingNotApplied {
					d.Outcome = events.OutcomeNotApplied
				}
				return d, nil, a.settle(ctx, e.turn, d, tools.Result{Output: e.describe(note), Err: res.Err})
			}
			return a.settleUnknown(ctx, e, d, false)
		}
		mayHaveRun = true
	}
}

// send runs the call once under its operation ID, within the wall-time
// budget; interrupted says a cancel or the budget stopped it.
func (a *attempt) send(ctx context.Context, e *effect) (tools.Result, bool) {
	runCtx, cancel := a.withinWall(ctx)
	defer cancel()
	env := a.env
	env.Operation = e.in.OperationID
	t0 := time.Now()
	res := a.registry.Run(runCtx, env, e.tool, e.args)
	metrics.ToolSeconds.WithLabelValues(a.toolLabel(e.call.Name)).Observe(time.Since(t0).Seconds())
	e.sends++
	res = redactResult(a.svc.secrets, res)
	if res.Outcome == "" && res.Err != nil && !knownFailure(res.Err.Code) {
		// A tool that cannot say (an extension failing at the protocol
		// level, a timeout) leaves the outcome unknown.
		res.Outcome = events.OutcomeUnknown
	}
	if res.Outcome == events.OutcomeUnknown && res.Err == nil {
		res.Err = &events.ToolError{Code: tools.CodeOutcomeUnknown, Message: "the outcome is unknown"}
	}
	if res.Outcome == events.OutcomeUnknown {
		res.Err.Code, res.Err.Retryable = tools.CodeOutcomeUnknown, false
	}
	return res, runCtx.Err() != nil && (ctx.Err() != nil || a.ctl.pendingCancel() != nil || a.wallSpent())
}

// knownFailure reports whether a tool error means the effect surely did
// not happen (the call never left, or the sink answered with a refusal).
func knownFailure(code string) bool {
	switch code {
	case tools.CodeBadArguments, tools.CodeURLNotAllowed, tools.CodeHTTPStatus,
		// An extension's answer with an error result: its server answered.
		extensions.CodeToolError:
		return true
	}
	return false
}

// reconcile looks for the outcome of an operation whose earlier send may
// have taken effect, using only what the case's contract allows: the
// status lookup, then a send again under the same key where the sink
// deduplicates, then a person. It says what it found and how.
func (a *attempt) reconcile(ctx context.Context, e *effect) (finding, string, error) {
	op := e.in.OperationID
	if f, note, err := a.lookupSettled(ctx, op, e.quiet); err != nil || f != findingUnknown {
		return f, note, err
	}
	if h := a.kase.HTTP; e.in.Tool == "http_call" && h != nil && h.Dedupe {
		return findingResend, "the endpoint deduplicates by Idempotency-Key", nil
	}
	sig, ok := a.awaitResolution(ctx, op)
	if !ok {
		if err := ctx.Err(); err != nil {
			return findingUnknown, "", err
		}
		if a.ctl.pendingCancel() != nil {
			return findingUnknown, "the run was cancelled while waiting for a person to resolve it", nil
		}
		return findingUnknown, fmt.Sprintf("nobody resolved it within %v", a.svc.approvalTimeout), nil
	}
	if _, err := a.commit(ctx, key(sig.ID), events.ControlAccepted{
		Control: events.ControlRef{ID: sig.ID, Signal: events.SignalResolve}, Operation: op, Outcome: sig.Outcome, Reason: sig.Reason,
	}); err != nil {
		return findingUnknown, "", err
	}
	if sig.Outcome == events.OutcomeApplied {
		return findingApplied, "a person found it took effect", nil
	}
	return findingNotApplied, "a person found it did not take effect", nil
}

// lookup asks the sink's status endpoint, when the case declares one,
// whether an operation took effect: 200 yes, 404 no, anything else
// unknown. A lookup is a read: it is allowed even after a cancel.
func (a *attempt) lookup(ctx context.Context, op string) (finding, string) {
	if a.kase == nil {
		return findingUnknown, ""
	}
	u := a.kase.HTTP.StatusURL(op)
	if u == "" {
		return findingUnknown, ""
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return findingUnknown, fmt.Sprintf("the status lookup failed: %v", err)
	}
	resp, err := statusClient.Do(req)
	if err != nil {
		return findingUnknown, fmt.Sprintf("the status lookup failed: %v", err)
	}
	resp.Body.Close()
	switch resp.StatusCode {
	case http.StatusOK:
		return findingApplied, "the status lookup reports it took effect"
	case http.StatusNotFound:
		return findingNotApplied, "the status lookup reports it did not take effect"
	}
	if resp.StatusCode >= 300 && resp.StatusCode < 400 {
		return findingUnknown, fmt.Sprintf("the status lookup answered %s to %q (redirects are not followed)", resp.Status, resp.Header.Get("Location"))
	}
	return findingUnknown, fmt.Sprintf("the status lookup answered %s", resp.Status)
}

// settleUnknown settles a call whose outcome nothing could establish, and
// ends the run for a person (unless a cancel or the budget ends it first:
// the run's end then names the operation). A call known not applied that
// may not be sent again is settled as not applied instead, and the run
// goes on.
func (a *attempt) settleUnknown(ctx context.Context, e effect, d events.CompletedDispatch, notApplied bool) (events.CompletedDispatch, *ending, error) {
	d.Digest = a.ws.Digest()
	if notApplied {
		d.Outcome = events.OutcomeNotApplied
		res := tools.Fail(tools.CodeIO, "%s", e.describe(fmt.Sprintf("it was not sent again (%d sends)", e.sends)))
		return d, nil, a.settle(ctx, e.turn, d, res)
	}
	d.Outcome = events.OutcomeUnknown
	res := tools.Result{Outcome: events.OutcomeUnknown, Err: &events.ToolError{Code: tools.CodeOutcomeUnknown, Message: e.describe("")}}
	if err := a.settle(ctx, e.turn, d, res); err != nil {
		return d, nil, err
	}
	if d.Disposition == events.DispositionCanceled {
		return d, nil, nil // the cancel or the budget ends the run; its end names the operation
	}
	end := ending{Status: events.RunNeedsHuman, Reason: step.UnknownReason(e.in, e.known)}
	return d, &end, nil
}

// describe joins what is known of an operation into one message.
func (e effect) describe(last string) string {
	msg := fmt.Sprintf("operation %s (%s)", e.in.OperationID, e.in.Tool)
	for _, k := range e.known {
		if k != "" {
			msg += ": " + k
		}
	}
	if last != "" {
		msg += ": " + last
	}
	return msg
}

// sendBackoff spaces sends of one operation: the first goes at once.
func sendBackoff(ctx context.Context, sends int) error {
	if sends == 0 {
		return nil
	}
	t := time.NewTimer(min(time.Duration(sends)*250*time.Millisecond, 2*time.Second))
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// wallSpent reports whether the attempt's wall-time budget has run out.
func (a *attempt) wallSpent() bool {
	wall := a.kase.Budget.Wall.Std()
	return wall > 0 && a.wallUsed() >= wall
}

// Error codes of calls the run ended around.
const (
	// CodeNotRun settles a call of a reply that never started: a cancel,
	// a budget overrun or an earlier call's unknown outcome ended the run
	// before it.
	CodeNotRun = "NOT_RUN"
	// CodeInterrupted settles a workspace call the run ended around while
	// it was in flight (its runner died, and the run was given up).
	CodeInterrupted = "INTERRUPTED"
)

// settleOpen settles every call of the run's last reply that has no
// dispatch.completed yet, before the run ends: a call never started is
// not_run; one intended and never settled was in flight when its attempt
// ended (an external one has an unknown outcome unless the status lookup
// can tell). Every call of a reply is settled, whatever ends the run.
func (a *attempt) settleOpen(ctx context.Context, end ending) error {
	log, err := a.svc.cache.Load(ctx, a.suite, a.run)
	if err != nil {
		return err
	}
	p := step.ReadProgress(log.Facts())
	if p.Replied == nil || p.Done {
		return nil
	}
	digest := p.Digest
	if a.ws != nil {
		digest = a.ws.Digest()
	}
	for _, call := range p.Replied.Calls {
		if _, ok := p.Completed[call.ID]; ok {
			continue
		}
		d := events.CompletedDispatch{CallID: call.ID, EvidenceRef: step.EvidenceRef(p.Turn, call.ID), Tool: call.Name,
			Verification: events.NotVerifier(), Digest: digest, Disposition: events.DispositionNotRun, Mutation: events.MutationNotApplied}
		res := tools.Fail(CodeNotRun, "this call was not run: the run ended %s (%s) before it", end.Status, end.Reason)
		if in, ok := p.Intended[call.ID]; ok {
			d.Disposition = events.DispositionCanceled
			res = tools.Fail(CodeInterrupted, "the run ended %s (%s) while this call was in flight; it was never settled", end.Status, end.Reason)
			if in.Effect.IsEffect() {
				d.Mutation, d.Outcome = events.MutationNotApplicable, events.OutcomeUnknown
				res = tools.Result{Err: &events.ToolError{Code: tools.CodeOutcomeUnknown,
					Message: fmt.Sprintf("operation %s (%s) was in flight when the run ended %s (%s): it may or may not have taken effect", in.OperationID, in.Tool, end.Status, end.Reason)}}
				f, note, err := a.lookupSettled(ctx, in.OperationID, a.began.Add(a.inFlight(in.Tool)))
				if err != nil {
					return err
				}
				if f == findingApplied || f == findingNotApplied {
					d.Outcome = events.OutcomeApplied
					if f == findingNotApplied {
						d.Outcome = events.OutcomeNotApplied
					}
					res.Err.Code, res.Err.Message = CodeInterrupted, res.Err.Message+"; "+note
				}
			}
		}
		if err := a.settle(ctx, p.Turn, d, res); err != nil {
			return err
		}
	}
	return nil
}
