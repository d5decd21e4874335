package runner

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/factline/factline/cases"
	"github.com/factline/factline/events"
	"github.com/factline/factline/ops/metrics"
	"github.com/factline/factline/services/runner/tools"
)

// checkOutputCap bounds what a declared check's output may be read for
// diagnostics; the observation the model sees is capped as usual.
const checkOutputCap = 1 << 20

// dispatchAll settles the calls of a turn's reply in order. Every call gets
// a settled dispatch: a call that is malformed, unknown, not allowed or a
// duplicate is rejected with a typed observation and the others still run.
// Calls the log already settled (a takeover) are taken as they are; a call
// intended but never settled is reconciled. It returns the turn's dispatches
// and the actor intent a task_complete call carried, if any.
func (a *attempt) dispatchAll(ctx context.Context, p progress) ([]events.CompletedDispatch, *events.ActorIntent, *ending, error) {
	var out []events.CompletedDispatch
	var intent *events.ActorIntent
	for _, call := range p.replied.Calls {
		if sig := a.ctl.pendingCancel(); sig != nil {
			// An accepted cancel allows no further effect.
			end, err := a.acceptCancel(ctx, sig)
			return nil, nil, &end, err
		}
		if done, ok := p.completed[call.ID]; ok {
			out = append(out, done.Dispatch)
			if in := settledIntent(call, done); in != nil {
				intent = in
			}
			continue
		}
		if in, ok := p.intended[call.ID]; ok {
			rec := a.reconcile(ctx, in)
			if rec.end != nil {
				// Nothing in the log or the contract can tell: a person
				// may, with factline resolve. Until then nothing runs.
				if rec, err := a.resolveByPerson(ctx, in); err != nil || rec.end != nil {
					return nil, nil, rec.end, err
				} else if rec.settled != nil {
					d := events.CompletedDispatch{CallID: call.ID, EvidenceRef: events.EvidenceRef(fmt.Sprintf("t%d/%s", p.turn, call.ID)),
						Tool: call.Name, Disposition: events.DispositionExecuted, Mutation: events.MutationNotApplicable,
						Verification: events.NotVerifier(), Digest: a.ws.Digest()}
					if err := a.settle(ctx, p.turn, d, *rec.settled); err != nil {
						return nil, nil, nil, err
					}
					out = append(out, d)
					continue
				}
				rec = reconciliation{}
			}
			if rec.settled != nil {
				d := events.CompletedDispatch{CallID: call.ID, EvidenceRef: events.EvidenceRef(fmt.Sprintf("t%d/%s", p.turn, call.ID)),
					Tool: call.Name, Disposition: events.DispositionExecuted, Mutation: events.MutationNotApplicable,
					Verification: events.NotVerifier(), Digest: a.ws.Digest()}
				if err := a.settle(ctx, p.turn, d, *rec.settled); err != nil {
					return nil, nil, nil, err
				}
				out = append(out, d)
				continue
			}
		}
		d, in, err := a.dispatch(ctx, p.turn, call)
		if err != nil {
			return nil, nil, nil, err
		}
		out = append(out, d)
		if in != nil {
			intent = in
		}
	}
	return out, intent, nil, nil
}

// settledIntent recovers the intent of an already settled task_complete
// call from its arguments.
func settledIntent(call events.ToolCall, done events.DispatchCompleted) *events.ActorIntent {
	if call.Name != "task_complete" || done.Dispatch.Disposition != events.DispositionExecuted || done.Error != nil {
		return nil
	}
	return tools.TaskComplete{}.Run(context.Background(), tools.Env{}, json.RawMessage(call.Args)).Intent
}

// reconciliation is what to do with a call intended but never settled.
type reconciliation struct {
	end     *ending       // stop the run for a person
	settled *tools.Result // the outcome is known: settle it without running
}

// reconcile decides what to do with a dispatch that was intended but never
// settled (its runner died in between). The workspace was restored to the
// last settled digest, so a workspace-local effect that may have happened
// is gone with the old workspace: running the call again cannot double it.
// An external effect goes by its contract: a sink that deduplicates by the
// operation ID may be sent the call again under the same ID; a sink with a
// status lookup is asked; otherwise a person decides. Never a blind repeat.
func (a *attempt) reconcile(ctx context.Context, in events.DispatchIntended) reconciliation {
	switch in.Effect {
	case events.EffectRead, events.EffectWrite:
		return reconciliation{}
	}
	human := &ending{events.RunNeedsHuman, fmt.Sprintf("unknown outcome of operation %s (%s): it may or may not have taken effect; settle it with factline resolve", in.OperationID, in.Tool)}
	h := a.kase.HTTP
	if in.Tool != "http_call" || h == nil {
		return reconciliation{end: human}
	}
	if h.Dedupe {
		return reconciliation{}
	}
	if u := h.StatusURL(in.OperationID); u != "" {
		applied, known := lookupOperation(ctx, u)
		switch {
		case known && applied:
			res := tools.Result{Output: "reconciled: the endpoint reports operation " + in.OperationID + " took effect; it was not sent again"}
			return reconciliation{settled: &res}
		case known:
			return reconciliation{}
		}
	}
	return reconciliation{end: human}
}

// resolveByPerson waits for a person's finding on an operation of unknown
// outcome and records it: applied settles the call without running it
// again, not applied lets it run again under the same operation ID. No
// finding in time ends the run for a person, naming the operation.
func (a *attempt) resolveByPerson(ctx context.Context, in events.DispatchIntended) (reconciliation, error) {
	human := &ending{events.RunNeedsHuman, fmt.Sprintf("unknown outcome of operation %s (%s): it may or may not have taken effect; settle it with factline resolve", in.OperationID, in.Tool)}
	sig, ok := a.awaitResolution(ctx, in.OperationID)
	if !ok {
		if sigc := a.ctl.pendingCancel(); sigc != nil {
			end, err := a.acceptCancel(ctx, sigc)
			return reconciliation{end: &end}, err
		}
		return reconciliation{end: human}, ctx.Err()
	}
	if _, err := a.commit(ctx, "control/"+sig.ID, events.ControlAccepted{
		Control: events.ControlRef{ID: sig.ID, Signal: events.SignalResolve}, Operation: in.OperationID, Outcome: sig.Outcome, Reason: sig.Reason,
	}); err != nil {
		return reconciliation{}, err
	}
	if sig.Outcome == events.OutcomeApplied {
		res := tools.Result{Output: "resolved by a person: operation " + in.OperationID + " took effect; it was not sent again"}
		return reconciliation{settled: &res}, nil
	}
	return reconciliation{}, nil
}

// lookupOperation asks a sink's status endpoint whether an operation took
// effect: 200 yes, 404 no, anything else unknown.
func lookupOperation(ctx context.Context, url string) (applied, known bool) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return false, false
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return false, false
	}
	resp.Body.Close()
	switch resp.StatusCode {
	case http.StatusOK:
		return true, true
	case http.StatusNotFound:
		return false, true
	}
	return false, false
}

func (a *attempt) dispatch(ctx context.Context, turn uint32, call events.ToolCall) (events.CompletedDispatch, *events.ActorIntent, error) {
	ref := events.EvidenceRef(fmt.Sprintf("t%d/%s", turn, call.ID))
	d := events.CompletedDispatch{CallID: call.ID, EvidenceRef: ref, Tool: call.Name, Verification: events.NotVerifier()}
	reject := func(res tools.Result) (events.CompletedDispatch, *events.ActorIntent, error) {
		d.Disposition, d.Mutation, d.Digest = events.DispositionRejected, events.MutationNotApplied, a.ws.Digest()
		return d, nil, a.settle(ctx, turn, d, res)
	}
	if isDuplicate(call.ID) {
		return reject(tools.Fail(tools.CodeDuplicateCall, "call id %q was already used in this reply; this call was not run", originalID(call.ID)))
	}
	if !contains(a.kase.Tools, call.Name) {
		if _, known := tools.BuiltinByName(call.Name); known {
			return reject(tools.Fail(tools.CodeNotAllowed, "tool %q is not allowed in this task", call.Name))
		}
	}
	tool, args, bad := a.registry.Check(call.Name, call.Args)
	if bad != nil {
		return reject(*bad)
	}
	if pc, ok := tool.(tools.Prechecker); ok {
		if bad := pc.Precheck(a.env, args); bad != nil {
			return reject(*bad)
		}
	}
	contract := tool.Contract()
	op := fmt.Sprintf("%s/t%d/%s", a.run, turn, call.ID)
	if _, err := a.commit(ctx, fmt.Sprintf("t%d/%s/intended", turn, call.ID), events.DispatchIntended{
		Turn: turn, CallID: call.ID, Tool: call.Name, OperationID: op, ArgsDigest: call.ArgsDigest, Effect: contract.Effect,
	}); err != nil {
		return d, nil, err
	}
	if a.needsApproval(call.Name) || contract.Approval == tools.ApprovalAlways {
		ok, err := a.approve(ctx, turn, call, op)
		if err != nil {
			return d, nil, err
		}
		if !ok {
			return reject(tools.Fail(CodeApprovalRejected, "a person rejected operation %s; it was not run", op))
		}
	}

	var res tools.Result
	check, isCheck := a.checkOf(call.Name, args)
	runCtx, cancel := a.withinWall(ctx)
	t0 := time.Now()
	env := a.env
	env.Operation = op
	if isCheck {
		res = tools.Exec(runCtx, env, check.Command, check.Timeout.Std(), checkOutputCap)
	} else {
		res = a.registry.Run(runCtx, env, tool, args)
	}
	interrupted := runCtx.Err() != nil
	cancel()
	// Before anything reads the output (diagnostics, the observation).
	res = redactResult(a.svc.secrets, res)
	metrics.ToolSeconds.WithLabelValues(a.toolLabel(call.Name)).Observe(time.Since(t0).Seconds())
	d.Disposition = events.DispositionExecuted
	switch {
	case interrupted && ctx.Err() == nil:
		// The wall-time budget ran out, or a cancel came, while the tool
		// ran; it was stopped. What it did before that is in the workspace
		// scan below.
		d.Disposition = events.DispositionCanceled
	case ctx.Err() != nil:
		d.Disposition = events.DispositionCanceled
	case res.Err != nil && res.Err.Code == tools.CodePathEscape:
		// Refused before anything touched disk.
		d.Disposition = events.DispositionRejected
	}
	d.Mutation = events.MutationNotApplicable
	if contract.Effect != events.EffectRead {
		changed, err := a.ws.Refresh(ctx)
		if te, past := workspaceLimit(err); past {
			// The workspace limit is part of the task: a failed call.
			res.Err, changed, err = te, false, nil
		}
		if err != nil {
			return d, nil, fmt.Errorf("workspace after %s: %w", call.Name, err)
		}
		switch {
		case changed:
			d.Mutation = events.MutationApplied
			a.epoch++
		case res.Err != nil:
			d.Mutation = events.MutationNotApplied
		default:
			d.Mutation = events.MutationUnchanged
		}
	}
	d.Digest = a.ws.Digest()
	if isCheck {
		d.Check = check.ID
		switch {
		case res.ExitCode != nil:
			d.Verification = verificationOf(check, *res.ExitCode, res.Output, res.Truncated, a.epoch)
		case res.Err != nil && res.Err.Code == tools.CodeTimeout:
			d.Verification = events.VerificationUnknown("the check timed out")
		default:
			d.Verification = events.NotRun()
		}
		// The model reads the usual capped observation.
		if out, cut := tools.CapOutput(res.Output, tools.RunCommand{}.Contract().OutputCap); cut {
			res.Output, res.Truncated = out, true
		}
	}
	return d, res.Intent, a.settle(ctx, turn, d, res)
}

// settle commits dispatch.completed with the observation the model reads.
func (a *attempt) settle(ctx context.Context, turn uint32, d events.CompletedDispatch, res tools.Result) error {
	res = redactResult(a.svc.secrets, res)
	metrics.ToolDispatches.WithLabelValues(a.toolLabel(d.Tool), string(d.Disposition)).Inc()
	_, err := a.commit(ctx, fmt.Sprintf("t%d/%s/completed", turn, d.CallID), events.DispatchCompleted{
		Turn: turn, Dispatch: d, Output: res.Observation(), Error: res.Err,
	})
	return err
}

// checkOf reports whether a run_command call runs one of the case's
// declared checks.
func (a *attempt) checkOf(tool string, args json.RawMessage) (cases.Check, bool) {
	if tool != "run_command" {
		return cases.Check{}, false
	}
	var ca tools.CommandArgs
	if json.Unmarshal(args, &ca) != nil {
		return cases.Check{}, false
	}
	return declaredCheck(a.kase, ca.Command)
}

func originalID(id events.CallID) string {
	s := string(id)
	for i := range len(s) {
		if s[i] == '#' {
			return s[:i]
		}
	}
	return s
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// CodeApprovalRejected settles a call a person rejected (or never approved).
const CodeApprovalRejected = "APPROVAL_REJECTED"

// needsApproval says whether the case makes a person approve a tool's calls.
func (a *attempt) needsApproval(tool string) bool {
	return tool == "http_call" && a.kase.HTTP != nil && a.kase.HTTP.Approval
}

// approve waits for a person's decision on an operation and commits the
// acceptance of that decision. It reports whether the call may run.
func (a *attempt) approve(ctx context.Context, turn uint32, call events.ToolCall, op string) (bool, error) {
	dec, ok := a.awaitApproval(ctx, op, call.ArgsDigest)
	if !ok {
		if ctx.Err() != nil {
			return false, ctx.Err()
		}
		return false, nil // cancelled while waiting: nothing runs
	}
	sig := events.SignalReject
	if dec.approved {
		sig = events.SignalApprove
	}
	_, err := a.commit(ctx, "control/"+dec.sig.ID, events.ControlAccepted{
		Control: events.ControlRef{ID: dec.sig.ID, Signal: sig}, CallID: call.ID, ArgsDigest: call.ArgsDigest, Reason: dec.sig.Reason,
	})
	return dec.approved, err
}

// toolLabel is a tool's metric label from a bounded set: a model can
// invent any name, and a label must never carry its text.
func (a *attempt) toolLabel(name string) string {
	if _, known := tools.BuiltinByName(name); known {
		return name
	}
	if _, offered := a.registry.Lookup(name); offered {
		return name // an allowlisted extension tool: a bounded set too
	}
	return "unknown"
}
