package runner

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/factline/factline/cases"
	"github.com/factline/factline/events"
	"github.com/factline/factline/models"
	"github.com/factline/factline/ops/metrics"
	"github.com/factline/factline/sandbox"
	"github.com/factline/factline/secrets"
	"github.com/factline/factline/services/runner/agentproxy"
	"github.com/factline/factline/services/runner/step"
	"github.com/factline/factline/services/runner/tools"
)

// Reasons an attempt with an external agent ends for.
const (
	// ReasonAgentInterrupted: an earlier attempt ran the agent and its
	// runner was lost. An external agent's own state (its conversation,
	// its plans) lives in its process, not in the log, so it cannot be
	// resumed: the run ends errored, a harness error `factline retry`
	// runs again as a new attempt.
	ReasonAgentInterrupted = "harness: interrupted: the runner driving an external agent was lost mid-attempt, and an external agent cannot be resumed from the log"
	// ReasonAgentExited: the agent ended by itself without the stop
	// decider finishing the run. The grader grades what it left.
	ReasonAgentExited = "agent_exited"
	// ReasonAgentRefused: the agent sent MaxRefusedInARow requests in a
	// row that the endpoint refused as invalid (a history its wire's
	// provider would refuse), and was ended.
	ReasonAgentRefused = "agent_refused"
)

// MaxRefusedInARow is how many requests in a row the endpoint refuses as
// invalid before the agent is ended. A refused request is no turn, so no
// step, token or cost budget counts it: an agent that sends it again and
// again, never mending it, would otherwise run until the wall budget, or
// without one for good. An agent that mends its request has a few tries.
const MaxRefusedInARow = 10

// AnswerGrace is how long an agent whose call the treatment's model
// refused (the provider answered it 4xx or 5xx) has to read that answer
// and exit by itself before it is ended. The run ends on such an answer,
// as the built-in loop's does; ended at once, the agent was killed before
// it had read why (it got 409 run_ended, if anything), and its output
// never said what the provider answered.
const AnswerGrace = 10 * time.Second

// FinishGrace is how long an agent whose answer the stop decider
// finished the run on has to exit by itself before it is ended. It has
// just been answered: ended at once, it was killed before it had read
// the answer, so what it does with its final answer (writes it where the
// grader reads it, prints it, flushes its own transcript into the
// workspace) never happened and the candidate never held it. A call it
// makes meanwhile is refused, run_ended; one that lingers is ended when
// the grace passes.
const FinishGrace = 5 * time.Second

// AgentTokenSecret names an attempt's endpoint token in the redaction
// marker ("[redacted:agent_token]").
const AgentTokenSecret = "agent_token"

// agentOutputCap bounds the agent's output kept for the runner's log: its
// last bytes, where a failing agent's traceback is.
const agentOutputCap = 64 << 10

// ContextPolicyAgent is the policy turn.started names for an external
// agent's calls: the agent builds its own context.
const ContextPolicyAgent = events.ContextPolicyAgent

// agentRun is the state an external agent's attempt shares between the
// agent's calls (the proxy's handlers) and the attempt that waits for the
// agent.
type agentRun struct {
	a *attempt
	// mu serialises the agent's calls: each is one turn, in order.
	mu sync.Mutex
	// end is the ending a call decided (a budget spent, the run
	// finished, a cancel); err a harness failure. Either stops the agent.
	end  step.Ending
	err  error
	stop context.CancelFunc
	// rmu guards the count of refused requests apart from mu, which a
	// call holds while the model answers: a request refused as invalid is
	// answered at once, even beside a call in flight. refusedInARow counts
	// the requests refused since the last one that reached the attempt,
	// lastRefused is why the last was, and refusedEnd is the ending once
	// MaxRefusedInARow were.
	rmu           sync.Mutex
	refusedInARow int
	lastRefused   string
	refusedEnd    step.Ending
	// ctx is the attempt's: commits outlive a cancel of the work.
	ctx context.Context
}

// external runs the treatment's agent in the workspace in place of the
// runner's loop, serving it the attempt's model endpoint, until the agent
// exits or a call, a control or the wall-time budget ends the run.
func (a *attempt) external(ctx context.Context) (step.Ending, error) {
	log, err := a.load(ctx)
	if err != nil {
		return step.Ending{}, err
	}
	if claims(log.Facts()) > 1 {
		// This attempt's claim is not the first: an earlier runner started
		// the agent and was lost.
		return step.Ending{Status: events.RunErrored, Reason: ReasonAgentInterrupted}, nil
	}
	x := &agentRun{a: a, ctx: ctx}
	agentCtx, stop := a.withinWall(ctx)
	defer stop()
	x.stop = stop
	spec := a.eff.Treatment.Agent
	sb := a.env.Sandbox
	inContainer := sb.Container()
	if inContainer {
		// In a container the check comes before the endpoint: a sandbox
		// without a uid of its own restarts its container after a command,
		// which gives it a new network namespace.
		pre, err := spec.Render(a.agentVars(spec, "http://127.0.0.1", ""))
		if err != nil {
			return step.Ending{Status: events.RunErrored, Reason: "harness: agent: " + err.Error()}, nil
		}
		if why := a.agentRunnable(ctx, pre.Argv[0], a.env.Environ); why != "" {
			return step.Ending{Status: events.RunErrored, Reason: "harness: agent: " + inImage(sb) + why}, nil
		}
	}
	srv, err := a.agentEndpoint(ctx, x.call)
	if err != nil {
		return step.Ending{}, err
	}
	srv.OnInvalid(x.refused)
	// The token is a secret while the attempt runs: an agent whose tool
	// prints its environment sends it back in its next request.
	defer a.svc.secrets.Add(secrets.Secret{Name: AgentTokenSecret, Value: srv.Token()})()
	defer srv.Close()
	vars := a.agentVars(spec, srv.Origin(), srv.Token())
	r, err := spec.Render(vars)
	if err != nil {
		return step.Ending{Status: events.RunErrored, Reason: "harness: agent: " + err.Error()}, nil
	}
	env := append([]string{}, a.env.Environ...)
	for k, v := range spec.WireEnv(vars) {
		if _, ok := r.Env[k]; !ok {
			env = append(env, k+"="+v)
		}
	}
	for k, v := range r.Env {
		env = append(env, k+"="+v)
	}
	if !inContainer {
		if why := a.agentRunnable(ctx, r.Argv[0], env); why != "" {
			return step.Ending{Status: events.RunErrored, Reason: "harness: agent: " + why}, nil
		}
	}
	a.status("agent", map[string]any{"command": r.Argv[0]})
	watchCtx, unwatch := context.WithCancel(agentCtx)
	watched := make(chan struct{})
	go func() { defer close(watched); x.endOnFinish(watchCtx) }()
	res, runErr := a.env.Sandbox.Run(agentCtx, sandbox.Command{Script: "exec " + shellQuote(r.Argv), Dir: a.ws.Root(), Env: env,
		OutputCap: agentOutputCap, Stdin: r.Stdin, HostNetwork: true, NoAddressSpaceLimit: true, EndsAtExit: true, KeepLast: true})
	if res.Truncated {
		// The capture kept the output's last bytes: its first may be the
		// end of a secret it cut in two, which no redaction would find.
		res.Output = tools.HoldBackAtCuts(res.Output, a.svc.secrets.PartialEnd, a.svc.secrets.PartialStart)
	}
	unwatch()
	<-watched
	stop()
	// A call in flight finishes recording its turn before the attempt
	// reads how the agent's run went.
	x.mu.Lock()
	end, callErr := x.end, x.err
	x.end = step.Ending{Status: events.RunErrored, Reason: "the agent has ended"} // refuse any later call
	x.mu.Unlock()
	x.rmu.Lock()
	refusedEnd, lastRefused := x.refusedEnd, x.lastRefused
	x.rmu.Unlock()
	level := slog.LevelInfo
	if res.ExitCode != 0 && !end.Ends() && !refusedEnd.Ends() && callErr == nil {
		// It failed by itself: what it printed is the one clue.
		level = slog.LevelWarn
	}
	a.svc.log.Log(ctx, level, "external agent ended", "suite", a.suite, "run", a.run, "exit", res.ExitCode, "timed_out", res.TimedOut,
		"output", tools.Tail(res.Output, 4096, a.svc.secrets.PartialStart))
	switch {
	case callErr != nil:
		return step.Ending{}, callErr
	case end.Ends():
		return end, nil
	case refusedEnd.Ends():
		return refusedEnd, nil
	}
	if sig := a.ctl.pendingCancel(); sig != nil {
		return a.acceptCancel(ctx, sig)
	}
	if wall := a.kase.Budget.Wall.Std(); wall > 0 && a.wallUsed() >= wall {
		return step.Exhausted(ReasonWallLimit), nil
	}
	if runErr != nil {
		return step.Ending{}, fmt.Errorf("run the agent: %w", runErr)
	}
	if ctx.Err() != nil {
		return step.Ending{}, ctx.Err()
	}
	// The agent's last turn is decided before the run ends: its finish,
	// when the stop decider finishes the run, is the run's ending.
	log, err = a.load(ctx)
	if err != nil {
		return step.Ending{}, err
	}
	if next, _ := step.ReadProgress(log.Facts()).Next(); next == step.AwaitDecision {
		if _, err := a.awaitDecision(ctx, step.ReadProgress(log.Facts()).Turn); err != nil {
			return step.Ending{}, err
		}
		if log, err = a.load(ctx); err != nil {
			return step.Ending{}, err
		}
	}
	if next, end := step.ReadProgress(log.Facts()).Next(); next == step.End {
		return end, nil
	}
	reason := ReasonAgentExited
	if res.ExitCode != 0 {
		reason += fmt.Sprintf(": exit status %d", res.ExitCode)
	}
	if lastRefused != "" {
		// An agent gives up on a refused request: why it was refused is
		// why the run ended, which its exit status does not say.
		reason += "; its last request was refused as invalid: " + lastRefused
	}
	return step.Ending{Status: events.RunIncomplete, Reason: reason}, nil
}

// refused is told of each request the endpoint refuses as invalid: it
// ends the agent at the MaxRefusedInARow-th in a row.
func (x *agentRun) refused(err error) {
	metrics.AgentRefused.WithLabelValues().Inc()
	x.rmu.Lock()
	defer x.rmu.Unlock()
	x.refusedInARow++
	x.lastRefused = err.Error()
	if x.refusedInARow != MaxRefusedInARow {
		return
	}
	// An ending a call decided meanwhile (x.end) comes first: the
	// attempt reads it before this one.
	x.refusedEnd = step.Ending{Status: events.RunIncomplete,
		Reason: fmt.Sprintf("%s: %d requests in a row refused as invalid, the last: %s", ReasonAgentRefused, x.refusedInARow, x.lastRefused)}
	x.stop()
}

// call is one model call of the agent: recorded as a turn, answered by the
// treatment's model, or refused when the run must end.
func (x *agentRun) call(_ context.Context, req models.Request) (models.Reply, error) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.err != nil || x.end.Ends() {
		return models.Reply{}, &agentproxy.Refusal{Status: http.StatusConflict, Type: "invalid_request_error", Code: "run_ended",
			Message: "the run has ended; no more calls are answered"}
	}
	x.rmu.Lock()
	ended := x.refusedEnd.Ends()
	if !ended {
		// A request that reaches the attempt is one the agent mended.
		x.refusedInARow, x.lastRefused = 0, ""
	}
	x.rmu.Unlock()
	if ended {
		return models.Reply{}, &agentproxy.Refusal{Status: http.StatusConflict, Type: "invalid_request_error", Code: "run_ended",
			Message: "the run has ended; no more calls are answered"}
	}
	// The attempt's context, not the request's: an agent hanging up does
	// not leave a turn half recorded.
	reply, end, err := x.a.agentTurn(x.ctx, req)
	var failed *modelFailure
	var uncarried *uncarriedDemand
	switch {
	case errors.As(err, &uncarried):
		// Refused as the endpoint refuses an invalid request: nothing
		// was recorded, and the agent may mend it.
		x.refused(uncarried)
		return models.Reply{}, &agentproxy.Refusal{Status: http.StatusBadRequest, Type: "invalid_request_error", Code: "unsupported_by_model",
			Message: x.a.svc.secrets.Redact(uncarried.Error())}
	case errors.As(err, &failed):
		x.end = failed.end
		// The agent is answered what the provider answered, and has a
		// moment to read it and exit by itself; any later call of its is
		// refused, run_ended.
		time.AfterFunc(AnswerGrace, x.stop)
		return models.Reply{}, refusalOfModel(x.a.svc.secrets, failed)
	case err != nil:
		x.err = err
		x.stop()
		return models.Reply{}, fmt.Errorf("harness: %w", err)
	case end.Ends():
		x.end = end
		x.stop()
		return models.Reply{}, refusalOf(end)
	}
	return reply, nil
}

// endOnFinish ends the agent once the stop decider finishes the run on
// one of its turns and FinishGrace has passed without it exiting. The agent is otherwise ended only at its next call:
// one that answered and then neither calls again nor exits (it waits on
// a child, a socket, a flush) would run on until the wall-time budget
// passed, which ended a run the decider had finished as exhausted, or,
// without a wall budget, kept the run open for good. It returns when ctx
// ends (the agent exited) or once it has ended the agent.
func (x *agentRun) endOnFinish(ctx context.Context) {
	a := x.a
	wake, unsubscribe, err := a.svc.bus.WakeOn(a.suite, a.run, events.KindStopDecided)
	if err != nil {
		// The agent is still ended at its next call or by the wall budget.
		a.svc.log.Warn("external agent: cannot watch stop decisions", "suite", a.suite, "run", a.run, "err", err)
		return
	}
	defer unsubscribe()
	// A wake is only a hint (the stream may serve the decision a moment
	// later), so the log is read again on a timer as well.
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-wake:
		case <-tick.C:
		}
		// The run cache, not a.load: the attempt's own bookkeeping belongs
		// to the calls, which run on other goroutines.
		log, err := a.svc.runs.Load(ctx, a.suite, a.run)
		if err != nil {
			continue
		}
		next, end := step.ReadProgress(log.Facts()).Next()
		if next != step.End {
			continue
		}
		x.mu.Lock()
		finishing := x.err == nil && !x.end.Ends()
		if finishing {
			// Any later call is refused from now on.
			x.end = end
		}
		x.mu.Unlock()
		if !finishing {
			return
		}
		grace := time.NewTimer(FinishGrace)
		defer grace.Stop()
		select {
		case <-ctx.Done():
		case <-grace.C:
			x.stop()
		}
		return
	}
}

// refusalOf is the error an agent is answered with when its call ends the
// run, in OpenAI's shapes: a spent budget is insufficient_quota.
func refusalOf(end step.Ending) *agentproxy.Refusal {
	msg := fmt.Sprintf("the run ended %s: %s", end.Status, end.Reason)
	if end.Status == events.RunExhausted {
		return &agentproxy.Refusal{Status: http.StatusTooManyRequests, Type: "insufficient_quota", Code: "insufficient_quota",
			Message: "the run's budget is spent (" + end.Reason + "): no more model calls are answered"}
	}
	return &agentproxy.Refusal{Status: http.StatusConflict, Type: "invalid_request_error", Code: "run_ended", Message: msg}
}

// uncarriedDemand is an agent's request the treatment's model cannot
// carry for what the agent demands of the answer (its tool choice or
// output format: JSON mode on Anthropic's wire): sent without it, the
// agent would be answered as it did not ask, so it is refused instead.
type uncarriedDemand struct{ err error }

func (u *uncarriedDemand) Error() string {
	return "the treatment's model cannot carry the request: " + u.err.Error()
}

func (u *uncarriedDemand) Unwrap() error { return u.err }

// uncarriable reports whether err, m's failure to render req, is the
// agent's demands' doing: the request renders without them. A request
// that fails without them too is the harness's or the treatment's
// (a setting the provider takes none of), not the agent's to mend.
func uncarriable(m models.Model, req models.Request, err error) bool {
	if models.KindOf(err) != models.ErrBadRequest || (req.ToolChoice == nil && req.Output == nil) {
		return false
	}
	req.ToolChoice, req.Output = nil, nil
	_, plainErr := m.Render(req)
	return plainErr == nil
}

// modelFailure is a model error that ends the run, as agentTurn returns
// it: end is the ending (as modelEnding gives it), err the model's error.
type modelFailure struct {
	end step.Ending
	err error
}

func (f *modelFailure) Error() string { return f.err.Error() }

// refusalOfModel is the answer to an agent whose call the treatment's
// model failed: a provider's HTTP answer keeps its status (a request it
// refused, 400, 413, 422, stays the agent's 400, 413, 422) and its
// message, redacted of the runner's secrets (the provider's API key is
// redacted where the error is made); a failure without a status (a
// timeout, a scripted model out of turns) is the run ending, 409.
func refusalOfModel(r *secrets.Redactor, f *modelFailure) *agentproxy.Refusal {
	var me *models.Error
	if !errors.As(f.err, &me) || me.Status < 400 || me.Status > 599 {
		return refusalOf(f.end)
	}
	typ := "invalid_request_error"
	switch {
	case me.Status == http.StatusTooManyRequests:
		typ = "rate_limit_exceeded"
	case me.Status >= 500:
		typ = "server_error"
	}
	said := http.StatusText(me.Status)
	if me.Err != nil {
		said = me.Err.Error()
	}
	return &agentproxy.Refusal{Status: me.Status, Type: typ, Code: "model_" + string(me.Kind),
		Message: r.Redact(fmt.Sprintf("the treatment's model answered HTTP %d: %s; the run ended %s", me.Status, said, f.end.Status))}
}

// agentTurn records one call of the agent as a turn: it waits for the
// stop decision on the agent's previous turn, checks the budgets, commits
// turn.started with the rendered request (stored as a blob), asks the
// model (through the response cache and the fleet's limits), commits
// model.replied and then turn.completed, the agent's tools being its own
// (no dispatches). It returns the ending when the run must end instead;
// when the model's error ends it, with a *modelFailure as its error. A
// request the model cannot carry for the agent's tool choice or output
// format is an *uncarriedDemand error, nothing recorded.
func (a *attempt) agentTurn(ctx context.Context, req models.Request) (models.Reply, step.Ending, error) {
	var p step.Progress
	var facts []events.Fact
	for {
		log, err := a.view(ctx)
		if err != nil {
			return models.Reply{}, step.Ending{}, err
		}
		facts = log.Facts()
		p = step.ReadProgress(facts)
		a.gen, a.epoch, a.queued = p.Gen, p.Epoch, queueWait(facts)
		a.ctl.seen(facts)
		if sig := a.ctl.pendingCancel(); sig != nil {
			end, err := a.acceptCancel(ctx, sig)
			return models.Reply{}, end, err
		}
		next, end := p.Next()
		if next == step.End {
			return models.Reply{}, end, nil
		}
		if next != step.AwaitDecision {
			break
		}
		if _, err := a.awaitDecision(ctx, p.Turn); err != nil {
			if sig := a.ctl.pendingCancel(); sig != nil {
				end, err := a.acceptCancel(ctx, sig)
				return models.Reply{}, end, err
			}
			return models.Reply{}, step.Ending{}, err
		}
	}
	if next, _ := p.Next(); next != step.StartTurn {
		return models.Reply{}, step.Ending{}, fmt.Errorf("turn %d is open: an external agent's turn is recorded whole", p.Turn)
	}
	turn := p.Turn + 1
	if wall := a.kase.Budget.Wall.Std(); wall > 0 && a.wallUsed() >= wall {
		return models.Reply{}, step.Exhausted(ReasonWallLimit), nil
	}
	req.Turn, req.Settings = int(turn), a.settings()
	// What the agent sends enters the log as the stored request: secrets
	// in it (the token its tool printed) are redacted before the model is
	// asked, so the blob is still exactly what the model was sent.
	req = redactRequest(a.svc.secrets, req)
	reserve := a.model.Reserve(req)
	if reason := step.Preflight(budgetOf(a.kase.Budget), step.Tally(facts), reserve); reason != "" {
		return models.Reply{}, step.Exhausted(reason), nil
	}
	body, err := a.model.Render(req)
	if err != nil {
		if uncarriable(a.model, req, err) {
			return models.Reply{}, step.Ending{}, &uncarriedDemand{err: err}
		}
		return models.Reply{}, step.Ending{Status: events.RunErrored, Reason: "harness: render the agent's request: " + err.Error()}, nil
	}
	digest := events.DigestOf(body)
	blob, err := a.svc.bus.Blobs().PutAfter(ctx, body, a.lastRequest)
	if err != nil {
		return models.Reply{}, step.Ending{}, err
	}
	a.lastRequest = blob
	if _, err := a.commit(ctx, key(turn), events.TurnStarted{Turn: turn, ContextDigest: digest, Messages: uint32(len(req.Messages)),
		Policy: ContextPolicyAgent, Reserve: reserve}); err != nil {
		return models.Reply{}, step.Ending{}, err
	}
	a.status("turn", map[string]any{"turn": turn})
	reply, cached, err := a.answer(ctx, req, turn, digest)
	if err != nil {
		if sig := a.ctl.pendingCancel(); sig != nil {
			end, err := a.acceptCancel(ctx, sig)
			return models.Reply{}, end, err
		}
		if wall := a.kase.Budget.Wall.Std(); wall > 0 && a.wallUsed() >= wall {
			return models.Reply{}, step.Exhausted(ReasonWallLimit), nil
		}
		if end := modelEnding(err); end.Ends() {
			return models.Reply{}, end, &modelFailure{end: end, err: err}
		}
		return models.Reply{}, step.Ending{}, err
	}
	replied := repliedFact(turn, a.model.Provider(), redactReply(a.svc.secrets, reply))
	replied.Cached = cached
	if a.respCache != nil {
		replied.CacheIdentity = a.respCache.identity
	}
	replied.QueueWaitMs = uint64(reply.QueueWait.Milliseconds())
	if _, err := a.commit(ctx, key(turn), replied); err != nil {
		return models.Reply{}, step.Ending{}, err
	}
	log, err := a.view(ctx)
	if err != nil {
		return models.Reply{}, step.Ending{}, err
	}
	if reason := step.Overrun(budgetOf(a.kase.Budget), step.Tally(log.Facts()), replied.Usage, reserve); reason != "" {
		// What the reply asked for is never done: the agent is not
		// given it.
		return models.Reply{}, step.Exhausted(reason), nil
	}
	if reply.Finish == models.FinishRefusal {
		return models.Reply{}, step.Ending{Status: events.RunNeedsHuman, Reason: "model_refused"}, nil
	}
	if err := a.completeTurn(ctx, turn, p.Gen, step.TurnIntent(nil, len(reply.Calls)), nil); err != nil {
		return models.Reply{}, step.Ending{}, err
	}
	return reply, step.Ending{}, nil
}

// agentVersionOf runs the agent's version command (cases.Agent.VersionArgv)
// contained as its commands are, without network, and returns what it
// printed, trimmed; "" when it names none or fails (said in the log).
func (a *attempt) agentVersionOf(ctx context.Context, ag *cases.Agent) string {
	argv := ag.VersionArgv()
	if len(argv) == 0 {
		return ""
	}
	// In the attempt's home, not its workspace: whatever the command
	// leaves behind is no work.
	res, err := a.env.Sandbox.Run(ctx, sandbox.Command{Script: "exec " + shellQuote(argv), Dir: filepath.Join(a.dir, "home"), Env: a.env.Environ,
		Timeout: agentVersionTimeout, OutputCap: 2048, NoAddressSpaceLimit: true})
	if err != nil || res.TimedOut || res.ExitCode != 0 {
		a.svc.log.Warn("the agent's version command failed: its identity names no version", "suite", a.suite, "run", a.run,
			"argv", argv, "err", err, "exit", res.ExitCode, "timed_out", res.TimedOut, "output", tools.Tail(res.Output, 512, a.svc.secrets.PartialStart))
		return ""
	}
	return strings.TrimSpace(res.Output)
}

// agentRunnableScript says, as the attempt's user in its workspace, why
// the command $c (set before it) cannot be run, exiting 1; it prints nothing when it can.
// A path whose directories the user may not search looks like no file at
// all (EACCES), so the message names both. A script is run by the
// interpreter its #! line names (directly, or found in PATH by env), which
// the user must be able to run as well: a python of a venv below root's
// home otherwise made the agent exit 126, graded as the agent's failure.
// On the host, with the attempt's own /tmp ($host set), a path below
// /tmp, /var/tmp or /dev/shm is missing because the attempt has its own:
// the message says so, since the user sees the file there.
const agentRunnableScript = `private() {
  [ -n "$host" ] || return 0
  case $1 in
  /tmp/*) d=/tmp ;; /var/tmp/*) d=/var/tmp ;; /dev/shm/*) d=/dev/shm ;; *) return 0 ;;
  esac
  echo "; $d is private to each attempt (a directory of its own), so nothing the host keeps below it is there: install the agent where every uid may read it, such as /usr/local/lib (docs/agents.md)"
}
case $c in
*/*) p=$c ;;
*) p=$(command -v -- "$c") || { echo "$c: not found in PATH ($PATH) of the attempt's user"; exit 1; } ;;
esac
[ -e "$p" ] || { echo "$p: no such file, or a directory on its path the attempt's user may not search (uid $(id -u))$(private "$p")"; exit 1; }
[ -f "$p" ] && [ -x "$p" ] || { echo "$p: not executable by the attempt's user (uid $(id -u))"; exit 1; }
{ h=$(head -c 2 -- "$p"); } 2>/dev/null
[ "$h" = '#!' ] || exit 0
{ IFS= read -r l < "$p"; } 2>/dev/null
set -f; set -- ${l#??}; set +f
[ $# -gt 0 ] || exit 0
i=$1
[ -e "$i" ] || { echo "$p: its interpreter $i (#! line): no such file, or a directory on its path the attempt's user may not search (uid $(id -u))$(private "$i")"; exit 1; }
[ -f "$i" ] && [ -x "$i" ] || { echo "$p: its interpreter $i (#! line): not executable by the attempt's user (uid $(id -u))"; exit 1; }
[ "${i##*/}" = env ] || exit 0
shift
while [ $# -gt 0 ]; do
  case $1 in
  -u|--unset|-C|--chdir) shift 2 ;;
  -*|*=*) shift ;;
  *) break ;;
  esac
done
[ $# -gt 0 ] || exit 0
case $1 in
*/*) [ -f "$1" ] && [ -x "$1" ] || { echo "$p: its interpreter $1 (#! line, through env): no such file, not executable, or a directory on its path the attempt's user may not search (uid $(id -u))$(private "$1")"; exit 1; } ;;
*) command -v -- "$1" >/dev/null || { echo "$p: its interpreter $1 (#! line, through env): not found in PATH ($PATH) of the attempt's user (uid $(id -u))"; exit 1; } ;;
esac`

// agentRunnable checks, contained as the agent will run, that its command
// can be run: "" when it can, otherwise why not, naming the command. An
// agent the attempt's user cannot reach (below root's 0700 home, say)
// would otherwise exit 126 with nothing said but the status.
func (a *attempt) agentRunnable(ctx context.Context, command string, env []string) string {
	script := "c=" + shellQuote([]string{command}) + "\n"
	if tmp, _ := a.env.Sandbox.Record().Feature(sandbox.FeaturePrivateTmp); !a.env.Sandbox.Container() && tmp.State == events.ContainmentActive {
		script += "host=1\n"
	}
	res, err := a.env.Sandbox.Run(ctx, sandbox.Command{Script: script + agentRunnableScript, Dir: a.ws.Root(), Env: env,
		Timeout: agentVersionTimeout, OutputCap: 2048, HostNetwork: true, NoAddressSpaceLimit: true})
	switch {
	case err != nil:
		return fmt.Sprintf("check that %s can be run: %v", command, err)
	case res.TimedOut:
		return fmt.Sprintf("check that %s can be run: timed out", command)
	case res.ExitCode != 0:
		return strings.TrimSpace(res.Output)
	}
	return ""
}

// agentVersionTimeout bounds the agent's version command.
const agentVersionTimeout = 30 * time.Second

// claims counts the run's claims.
func claims(facts []events.Fact) int {
	n := 0
	for _, f := range facts {
		if _, ok := f.Body.(events.RunClaimed); ok {
			n++
		}
	}
	return n
}

// shellQuote renders argv as one shell line that runs it as given.
func shellQuote(argv []string) string {
	q := make([]string, len(argv))
	for i, s := range argv {
		q[i] = "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
	}
	return strings.Join(q, " ")
}
