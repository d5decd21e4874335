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
	// timeout (see step.Settling).
	quiet time.Time
}

// settleEffect sends an external call and settles it with the outcome the
// sink's answer shows, taking the steps step.Effect decides one by one,
// each after the wait it names: the fence before every send (whose
// verdict is the core's: a send, or the run handed back), the lookups
// (whose "not found" the core believes only past the settle window), a
// person. An
// answer lost after the request may have reached the sink (a timeout, a
// reset connection, a cancel while in flight) is an unknown outcome, and
// nothing else of the run happens until it is reconciled under the same
// operation ID: the status lookup the case declares, a send again only
// where the sink deduplicates by key, or a person's finding. The model is
// told the outcome only once it is known; when nothing can tell, the call
// is settled unknown and the run ends for a person. mayHaveRun says an
// earlier attempt may have sent it already (a takeover found it intended
// and never settled: step.PlanReconcile).
func (a *attempt) settleEffect(ctx context.Context, e effect, mayHaveRun bool) (settled, error) {
	d := events.CompletedDispatch{CallID: e.call.ID, EvidenceRef: step.EvidenceRef(e.turn, e.call.ID), Tool: e.call.Name,
		Disposition: events.DispositionExecuted, Mutation: events.MutationNotApplicable, Verification: events.NotVerifier()}
	if mayHaveRun {
		// Whoever sent it earlier did so before this attempt began (a
		// runner's send starts within its hold, which ended before this
		// attempt's delivery), and gave up on it within the tool's timeout.
		e.quiet = a.began.Add(a.inFlight(e.in.Tool))
	}
	var sent tools.Result // the last send's answer
	var looked string     // what the look after an interrupted send found
	next := a.effectNow(e).Begin(mayHaveRun)
	for {
		switch next.Act() {
		case step.EffectLookup:
			f, note, err := a.lookAfter(ctx, e.in.OperationID, next.Wait())
			if err != nil {
				return settled{}, err
			}
			next = a.effectNow(e).AfterLookup(f)
			if f == step.FoundNothing && a.dedupes(e.in.Tool) {
				note = "the endpoint deduplicates by Idempotency-Key"
			}
			// A lookup made again past the settle window, or a person,
			// says what is known next.
			if act := next.Act(); act != step.EffectAskPerson && act != step.EffectLookup {
				e.known = append(e.known, note)
			}
		case step.EffectAskPerson:
			f, note, err := a.askPerson(ctx, e.in.OperationID)
			if err != nil {
				return settled{}, err
			}
			e.known = append(e.known, note)
			next = a.effectNow(e).AfterPerson(f)
		case step.EffectFence:
			// Nothing is sent, the first time or again, unless the run is
			// still this attempt's and stays so until the send has left.
			if err := sleep(ctx, time.Duration(next.Wait())); err != nil {
				return settled{}, err
			}
			h, err := a.fence(ctx)
			if err != nil {
				return settled{}, err
			}
			next = a.effectNow(e).AfterFence(h)
		case step.EffectHandBack:
			return settled{}, fmt.Errorf("%w: %s", errUnfenced, next.Refusal())
		case step.EffectSend:
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
				return settled{}, fmt.Errorf("workspace after %s: %w", e.call.Name, err)
			}
			if res.Outcome == events.OutcomeUnknown {
				e.known = append(e.known, res.Err.Message)
			}
			sent = res
			next = a.effectNow(e).AfterSend(res.Outcome, res.Err != nil, interrupted)
		case step.EffectLook:
			// A cancel or the wall-time budget stopped the call in flight:
			// that is no proof the effect was stopped. Only a look (no
			// effect) may still settle it; the run then ends either way.
			f, note, err := a.lookAfter(ctx, e.in.OperationID, next.Wait())
			if err != nil {
				return settled{}, err
			}
			if next = a.effectNow(e).AfterLook(f); next.Act() == step.EffectLook {
				continue // made again past the settle window
			}
			if f != step.FoundNothing {
				e.known = append(e.known, note)
			}
			looked = note
		default:
			return a.settleEffectAs(ctx, e, d, next, sent, looked)
		}
	}
}

// settleEffectAs settles an external call as step s says: sent is the
// last send's answer, looked what the look after an interrupted send found.
func (a *attempt) settleEffectAs(ctx context.Context, e effect, d events.CompletedDispatch, s step.EffectStep, sent tools.Result, looked string) (settled, error) {
	if s.Interrupted() {
		d.Disposition = events.DispositionCanceled
	}
	d.Digest, d.Outcome = a.ws.Digest(), s.Outcome()
	var res tools.Result
	switch s.Act() {
	case step.EffectSettleFound:
		res = tools.Result{Output: e.describe(fmt.Sprintf("operation %s took effect; it was not sent again", e.in.OperationID))}
	case step.EffectSettleNotSent:
		res = tools.Fail(tools.CodeIO, "%s", e.describe(fmt.Sprintf("it was not sent again (%d sends)", e.sends)))
	case step.EffectSettleUnknown:
		res = tools.Result{Outcome: events.OutcomeUnknown, Err: &events.ToolError{Code: tools.CodeOutcomeUnknown, Message: e.describe("")}}
	case step.EffectSettleAnswer:
		res = sent
		if len(e.known) > 0 && res.Err == nil {
			res.Output = e.describe("sent again under the same operation ID, it took effect; the endpoint answered:\n" + res.Output)
		}
	case step.EffectSettleLooked:
		res = tools.Result{Output: e.describe(looked), Err: sent.Err}
	default:
		return settled{}, fmt.Errorf("operation %s: %s", e.in.OperationID, s)
	}
	if err := a.settle(ctx, e.turn, d, res); err != nil {
		return settled{}, err
	}
	if s.EndsRun() {
		return settled{dispatch: d, end: step.Ending{Status: events.RunNeedsHuman, Reason: step.UnknownReason(e.in, e.known)}}, nil
	}
	// An interrupted send's unknown outcome: the cancel or the budget ends
	// the run, and its end names the operation.
	return settled{dispatch: d}, nil
}

// effectNow is what the attempt knows of an external operation it is
// settling, for step.Effect to decide its next step on.
func (a *attempt) effectNow(e effect) step.Effect {
	return step.Effect{Offered: e.tool != nil, Dedupes: a.dedupes(e.in.Tool), Sends: e.sends, Cancel: a.ctl.pendingCancel() != nil,
		Settling: a.settling(e.quiet)}
}

// dedupes says a tool's sink deduplicates by the operation ID: the case
// says so of http_call's endpoint.
func (a *attempt) dedupes(tool string) bool {
	h := a.kase.HTTP
	return tool == "http_call" && h != nil && h.Dedupe
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

// askPerson waits for a person to say whether an operation of unknown
// outcome took effect, and commits what they said. It says what they
// found, and how; nothing when nobody said in time or a cancel ended the
// wait.
func (a *attempt) askPerson(ctx context.Context, op string) (step.Finding, string, error) {
	sig, ok := a.awaitResolution(ctx, op)
	if !ok {
		if err := ctx.Err(); err != nil {
			return step.FoundNothing, "", err
		}
		if a.ctl.pendingCancel() != nil {
			return step.FoundNothing, "the run was cancelled while waiting for a person to resolve it", nil
		}
		return step.FoundNothing, fmt.Sprintf("nobody resolved it within %v", a.svc.approvalTimeout), nil
	}
	if _, err := a.commit(ctx, key(sig.ID), events.ControlAccepted{
		Control: events.ControlRef{ID: sig.ID, Signal: events.SignalResolve}, Operation: op, Outcome: sig.Outcome, Reason: sig.Reason,
	}); err != nil {
		return step.FoundNothing, "", err
	}
	if sig.Outcome == events.OutcomeApplied {
		return step.FoundApplied, "a person found it took effect", nil
	}
	return step.FoundNotApplied, "a person found it did not take effect", nil
}

// lookup asks the sink's status endpoint, when the case declares one,
// whether an operation took effect: 200 yes, 404 no, anything else
// unknown. A lookup is a read: it is allowed even after a cancel.
func (a *attempt) lookup(ctx context.Context, op string) (step.Finding, string) {
	if a.kase == nil {
		return step.FoundNothing, ""
	}
	u := a.kase.HTTP.StatusURL(op)
	if u == "" {
		return step.FoundNothing, ""
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return step.FoundNothing, fmt.Sprintf("the status lookup failed: %v", err)
	}
	resp, err := statusClient.Do(req)
	if err != nil {
		return step.FoundNothing, fmt.Sprintf("the status lookup failed: %v", err)
	}
	resp.Body.Close()
	switch resp.StatusCode {
	case http.StatusOK:
		return step.FoundApplied, "the status lookup reports it took effect"
	case http.StatusNotFound:
		return step.FoundNotApplied, "the status lookup reports it did not take effect"
	}
	if resp.StatusCode >= 300 && resp.StatusCode < 400 {
		return step.FoundNothing, fmt.Sprintf("the status lookup answered %s to %q (redirects are not followed)", resp.Status, resp.Header.Get("Location"))
	}
	return step.FoundNothing, fmt.Sprintf("the status lookup answered %s", resp.Status)
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
// dispatch.completed yet, before the run ends, as step.PlanLeft says: a
// call never started is not_run; one intended and never settled was in
// flight when its attempt ended (an external one has an unknown outcome
// unless the status lookup can tell). Every call of a reply is settled,
// whatever ends the run.
func (a *attempt) settleOpen(ctx context.Context, end step.Ending) error {
	log, err := a.svc.runs.Load(ctx, a.suite, a.run)
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
		left := step.PlanLeft(p, call.ID)
		var res tools.Result
		switch left.Act() {
		case step.LeftSettled:
			continue
		case step.LeftChild:
			if err := a.settleChildLeft(ctx, left.Intended(), end); err != nil {
				return err
			}
			continue
		case step.LeftNotRun:
			res = tools.Fail(CodeNotRun, "this call was not run: the run ended %s (%s) before it", end.Status, end.Reason)
		case step.LeftInterrupted:
			res = tools.Fail(CodeInterrupted, "the run ended %s (%s) while this call was in flight; it was never settled", end.Status, end.Reason)
		case step.LeftInFlight:
			in := left.Intended()
			// Whoever sent it did so before this attempt began, and gave
			// up on it within the tool's timeout.
			quiet := a.began.Add(a.inFlight(in.Tool))
			var note string
			for wait := step.Nanos(0); ; wait = left.Wait() {
				var f step.Finding
				if f, note, err = a.lookAfter(ctx, in.OperationID, wait); err != nil {
					return err
				}
				if left = left.Found(f, a.settling(quiet)); left.Wait() == 0 {
					break
				}
			}
			res = tools.Result{Err: &events.ToolError{Code: tools.CodeOutcomeUnknown,
				Message: fmt.Sprintf("operation %s (%s) was in flight when the run ended %s (%s): it may or may not have taken effect", in.OperationID, in.Tool, end.Status, end.Reason)}}
			if left.Looked() {
				res.Err.Code, res.Err.Message = CodeInterrupted, res.Err.Message+"; "+note
			}
		default:
			return fmt.Errorf("call %s of turn %d left open: act %d", call.ID, p.Turn, left.Act())
		}
		d := events.CompletedDispatch{CallID: call.ID, EvidenceRef: step.EvidenceRef(p.Turn, call.ID), Tool: call.Name,
			Verification: events.NotVerifier(), Digest: digest, Disposition: left.Disposition(), Mutation: left.Mutation(), Outcome: left.Outcome()}
		if err := a.settle(ctx, p.Turn, d, res); err != nil {
			return err
		}
	}
	return nil
}
