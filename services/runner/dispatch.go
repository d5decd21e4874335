package runner

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/factline/factline/cases"
	"github.com/factline/factline/events"
	"github.com/factline/factline/models"
	"github.com/factline/factline/ops/metrics"
	"github.com/factline/factline/services/runner/step"
	"github.com/factline/factline/services/runner/tools"
)

// checkOutputCap bounds what a declared check's output may be read for
// diagnostics; the observation the model sees is capped as usual.
const checkOutputCap = 1 << 20

// replyCalls is what settling a reply's calls came to: their dispatches
// in order, the actor intent a task_complete call carried, and the run's
// end when a call ended it (an operation of unknown outcome).
type replyCalls struct {
	dispatches []events.CompletedDispatch
	intent     *events.ActorIntent
	end        step.Ending
}

// settled is one call settled: its dispatch, the actor intent it carried
// (task_complete), and the run's end when it ends the run.
type settled struct {
	dispatch events.CompletedDispatch
	intent   *events.ActorIntent
	end      step.Ending
}

// dispatchAll settles the calls of a turn's reply in order, each as its
// plan says (step.PlanCall): every call gets a settled dispatch, a call
// rejected with a typed observation included, and the others still run. A
// pending cancel stops it before the next call (the calls not run are
// settled when the run ends); so does an ending one call brings (an
// operation of unknown outcome).
func (a *attempt) dispatchAll(ctx context.Context, p step.Progress) (replyCalls, error) {
	var out replyCalls
	for _, call := range p.Replied.Calls {
		t := a.toolFor(call)
		if p.Replied.Finish == models.FinishLength {
			t.invalid.CutShort(call.Args)
		}
		plan := step.PlanCall(p, call, t.view, a.ctl.pendingCancel() != nil)
		if plan.Act() == step.PlanStop {
			// An accepted cancel allows no further effect.
			return out, nil
		}
		s, err := a.carryOut(ctx, p, call, t, plan)
		if err != nil {
			return replyCalls{}, err
		}
		out.dispatches = append(out.dispatches, s.dispatch)
		if s.intent != nil {
			out.intent = s.intent
		}
		if s.end.Ends() {
			out.end = s.end
			return out, nil
		}
	}
	return out, nil
}

// callTool is what the runner's registry and case say of a call's tool:
// the tool and the arguments it takes, or the registry's or the tool's
// refusal of the call, and the view of it a plan is decided on.
type callTool struct {
	tool    tools.Tool // nil: not offered, or arguments its schema refuses
	args    json.RawMessage
	invalid *tools.Result // the registry's refusal
	refused *tools.Result // the tool's precheck's refusal
	view    step.Tool
}

// toolFor looks a call's tool up and checks the call against it, running
// nothing.
func (a *attempt) toolFor(call events.ToolCall) callTool {
	name := call.Name
	if name == step.UnnamedTool {
		name = "" // the registry says the call names no tool
	}
	tool, args, bad := a.registry.Check(name, call.Args)
	_, builtin := tools.BuiltinByName(call.Name)
	t := callTool{tool: tool, args: args, invalid: bad,
		view: step.Tool{Builtin: builtin, Allowed: contains(a.offered, call.Name), Invalid: bad != nil, Approval: a.needsApproval(call.Name),
			Delegate: call.Name == cases.DelegateTool}}
	if tool == nil {
		return t
	}
	c := tool.Contract()
	t.view.Effect = c.Effect
	t.view.Approval = t.view.Approval || c.Approval == tools.ApprovalAlways
	if pc, ok := tool.(tools.Prechecker); ok {
		t.refused = pc.Precheck(a.env, args)
		t.view.Refused = t.refused != nil
	}
	return t
}

// carryOut settles one call as its plan says.
func (a *attempt) carryOut(ctx context.Context, p step.Progress, call events.ToolCall, t callTool, plan step.Plan) (settled, error) {
	switch plan.Act() {
	case step.PlanTake:
		done := p.Completed[call.ID]
		return settled{dispatch: done.Dispatch, intent: settledIntent(call, done)}, nil
	case step.PlanReject:
		op := a.operation(p.Turn, call.ID)
		if in, ok := p.Intended[call.ID]; ok {
			op = in.OperationID
		}
		return a.reject(ctx, p.Turn, call, t, plan, op, "")
	case step.PlanRun, step.PlanSend:
		return a.dispatch(ctx, p.Turn, call, t, plan)
	case step.PlanDelegate:
		return a.delegate(ctx, p, call, t)
	case step.PlanReconcile:
		// The workspace was restored to the last settled digest, but the
		// effect may have reached its sink before the attempt that
		// intended it died.
		return a.settleEffect(ctx, effect{turn: p.Turn, call: call, in: p.Intended[call.ID], tool: t.tool, args: t.args}, true)
	}
	return settled{}, fmt.Errorf("call %s of turn %d: %s", call.ID, p.Turn, plan)
}

// settledIntent recovers the intent of an already settled task_complete
// call from its arguments.
func settledIntent(call events.ToolCall, done events.DispatchCompleted) *events.ActorIntent {
	if call.Name != "task_complete" || done.Dispatch.Disposition != events.DispositionExecuted || done.Error != nil {
		return nil
	}
	return tools.TaskComplete{}.Run(context.Background(), tools.Env{}, json.RawMessage(call.Args)).Intent
}

// operation is the operation ID of a call: what its sink deduplicates by
// and a person approves or resolves.
func (a *attempt) operation(turn uint32, id events.CallID) string {
	return fmt.Sprintf("%s/t%d/%s", a.run, turn, id)
}

// reject settles a call rejected without running, with the observation its
// plan's reason calls for; op is its operation ID, why the runner's own
// reason when no person decided on an approval ("" otherwise).
func (a *attempt) reject(ctx context.Context, turn uint32, call events.ToolCall, t callTool, plan step.Plan, op, why string) (settled, error) {
	d := events.CompletedDispatch{CallID: call.ID, EvidenceRef: step.EvidenceRef(turn, call.ID), Tool: call.Name,
		Disposition: events.DispositionRejected, Mutation: events.MutationNotApplied, Verification: events.NotVerifier(),
		Digest: a.ws.Digest(), Outcome: plan.Outcome()}
	var res tools.Result
	switch plan.Reason() {
	case step.RejectDuplicate:
		res = tools.Fail(tools.CodeDuplicateCall, "call id %q was already used in this reply; this call was not run", step.OriginalID(call.ID))
	case step.RejectNotAllowed:
		res = tools.Fail(tools.CodeNotAllowed, "tool %q is not allowed in this task", call.Name)
	case step.RejectInvalid:
		res = *t.invalid
	case step.RejectRefused:
		res = *t.refused
	case step.RejectApproval:
		res = tools.Fail(CodeApprovalRejected, "a person rejected operation %s; it was not run", op)
		if why != "" {
			// Nobody decided: the runner's own rejection says why.
			res = tools.Fail(CodeApprovalRejected, "operation %s was not run: %s", op, why)
		}
	default:
		return settled{}, fmt.Errorf("call %s of turn %d: %s", call.ID, turn, plan)
	}
	return settled{dispatch: d}, a.settle(ctx, turn, d, res)
}

// dispatch commits a call's intent and, once a person approved it when its
// plan asks for that, runs it: an external effect as a fenced send, any
// other in the workspace.
func (a *attempt) dispatch(ctx context.Context, turn uint32, call events.ToolCall, t callTool, plan step.Plan) (settled, error) {
	in := events.DispatchIntended{
		Turn: turn, CallID: call.ID, Tool: call.Name, OperationID: a.operation(turn, call.ID),
		ArgsDigest: call.ArgsDigest, Effect: t.view.Effect,
	}
	if _, err := a.commit(ctx, key(turn, call.ID), in); err != nil {
		return settled{}, err
	}
	if plan.AwaitsApproval() {
		ok, why, err := a.approve(ctx, turn, call, in.OperationID)
		if err != nil {
			return settled{}, err
		}
		if plan = plan.Approved(ok); plan.Act() == step.PlanReject {
			return a.reject(ctx, turn, call, t, plan, in.OperationID, why)
		}
	}
	if plan.Act() == step.PlanSend {
		return a.settleEffect(ctx, effect{turn: turn, call: call, in: in, tool: t.tool, args: t.args}, false)
	}
	return a.runInWorkspace(ctx, turn, call, t, in)
}

// runInWorkspace runs a call whose effects stay in the workspace (a
// declared check among them) and settles it with what it did.
func (a *attempt) runInWorkspace(ctx context.Context, turn uint32, call events.ToolCall, t callTool, in events.DispatchIntended) (settled, error) {
	tool, args, contract := t.tool, t.args, t.tool.Contract()
	d := events.CompletedDispatch{CallID: call.ID, EvidenceRef: step.EvidenceRef(turn, call.ID), Tool: call.Name, Verification: events.NotVerifier()}
	var res tools.Result
	check, isCheck := a.checkOf(call.Name, args)
	runCtx, cancel := a.withinWall(ctx)
	t0 := time.Now()
	env := a.env
	env.Operation = in.OperationID
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
	var err error
	d.Mutation, err = a.mutation(ctx, contract, res)
	if te, past := workspaceLimit(err); past {
		// The workspace limit is part of the task: a failed call.
		res.Err, d.Mutation, err = te, events.MutationNotApplied, nil
	}
	if err != nil {
		return settled{}, fmt.Errorf("workspace after %s: %w", call.Name, err)
	}
	d.Digest = a.ws.Digest()
	if isCheck {
		d.Check = check.ID
		switch {
		case res.ExitCode != nil:
			d.Verification = step.VerificationOf(ruleOf(check.Diagnostics), *res.ExitCode, res.Output, res.Truncated, a.epoch)
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
	return settled{dispatch: d, intent: res.Intent}, a.settle(ctx, turn, d, res)
}

// mutation rescans the workspace after a call that may change it and says
// what the call did to it: applied when the digest changed (one more
// source epoch), unchanged, not_applied when it failed and changed
// nothing, not_applicable for reads.
func (a *attempt) mutation(ctx context.Context, contract tools.Contract, res tools.Result) (events.Mutation, error) {
	if contract.Effect == events.EffectRead {
		return events.MutationNotApplicable, nil
	}
	changed, err := a.ws.Refresh(ctx)
	switch {
	case err != nil:
		return "", err
	case changed:
		a.epoch++
		return events.MutationApplied, nil
	case res.Err != nil:
		return events.MutationNotApplied, nil
	}
	return events.MutationUnchanged, nil
}

// settle commits dispatch.completed with the observation the model reads.
func (a *attempt) settle(ctx context.Context, turn uint32, d events.CompletedDispatch, res tools.Result) error {
	res = redactResult(a.svc.secrets, res)
	metrics.ToolDispatches.WithLabelValues(a.toolLabel(d.Tool), string(d.Disposition)).Inc()
	_, err := a.commit(ctx, key(turn, d.CallID), events.DispatchCompleted{
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

// declaredCheck finds the case check a command runs: the same command text,
// ignoring surrounding space. Only a declared check's result is a
// verification; any other command is housekeeping.
func declaredCheck(c *cases.Case, command string) (cases.Check, bool) {
	cmd := strings.TrimSpace(command)
	for _, ch := range c.Checks {
		if strings.TrimSpace(ch.Command) == cmd {
			return ch, true
		}
	}
	return cases.Check{}, false
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
// acceptance of that decision. It reports whether the call may run and,
// when the runner rejected it itself (no decision came in time), why.
func (a *attempt) approve(ctx context.Context, turn uint32, call events.ToolCall, op string) (bool, string, error) {
	dec, ok := a.awaitApproval(ctx, op, call.ArgsDigest)
	if !ok {
		if ctx.Err() != nil {
			return false, "", ctx.Err()
		}
		return false, "", nil // cancelled while waiting: nothing runs
	}
	why := ""
	if dec.timedOut {
		why = dec.sig.Reason
	}
	sig := events.SignalReject
	if dec.approved {
		sig = events.SignalApprove
	}
	_, err := a.commit(ctx, dec.key(), events.ControlAccepted{
		Control: events.ControlRef{ID: dec.sig.ID, Signal: sig}, CallID: call.ID, ArgsDigest: call.ArgsDigest, Reason: dec.sig.Reason,
	})
	return dec.approved, why, err
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
