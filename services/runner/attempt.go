package runner

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/oklog/ulid/v2"

	"github.com/factline/factline/bus"
	"github.com/factline/factline/cases"
	"github.com/factline/factline/events"
	"github.com/factline/factline/models"
	"github.com/factline/factline/ops/metrics"
	"github.com/factline/factline/services/runner/extensions"
	"github.com/factline/factline/services/runner/step"
	"github.com/factline/factline/services/runner/tools"
)

// ErrLeaseLost means another runner claimed the run after this one: the
// stale runner stops without another effect.
var ErrLeaseLost = errors.New("lease lost: another runner claimed the run")

// errRunEnded marks the loss of a lease to the run's end rather than to
// another attempt's claim.
var errRunEnded = errors.New("the run has ended")

// lostLease is what the delivery of an attempt that lost its lease gets:
// an ack when the run has ended (nothing is left to do), and otherwise
// nothing: the attempt that claimed the run holds the newest delivery of
// the same message, and an ack from this one would settle the message
// under it, so that its crash would never bring the run back.
func lostLease(err error) error {
	if errors.Is(err, errRunEnded) {
		return nil
	}
	return fmt.Errorf("%w: %w", bus.ErrHeldElsewhere, err)
}

// attempt drives one run from its claim to its end.
type attempt struct {
	svc       *Service
	suite     string
	run       string
	lease     uint32
	requested events.RunRequested
	kase      *cases.Case
	eff       cases.Effective
	// system is the run's system prompt, rendered from its case and
	// treatment as stored (cases.SystemPrompt) when the attempt began.
	system string
	// offered are the built-in tools offered: the case's, narrowed by
	// the treatment's scaffold (cases.OfferedTools).
	offered  []string
	model    models.Model
	registry *tools.Registry
	exts     *extensions.Set // the run's extension servers (nil: none)
	ws       Workspace
	env      tools.Env
	started  time.Time
	// began is when this attempt began, on this runner's clock: a send
	// of an earlier attempt started before it (see effect.quiet).
	began time.Time
	// hold is this attempt's lease on the run's delivery (nil for an
	// attempt that only ends a run given up): external effects are sent
	// only under it (fence).
	hold  *bus.Lease
	gen   uint32 // current task generation
	epoch uint64 // source epoch: 1 + applied mutations so far
	ctl   *controls
	work  context.Context // model calls and tools; a cancel stops it
	dir   string
	// claimID is the message ID of this attempt's claim once it is
	// committed: the attempt holds the run while that claim is the newest.
	claimID string
	// rendered is the request of the turn this attempt started last, as
	// its turn.started committed it: the model is then sent it without
	// the history being rebuilt and rendered a second time.
	rendered *renderedTurn
	// respCache is the treatment's response cache, once a call looked
	// (nil: off, or not looked yet).
	respCache *responseCache
	// origin is the run the last cache hit cited, as loaded to check it.
	origin *originRun
	// queued is the time the run's model calls waited for fleet-wide
	// limit slots: not charged to the wall-time budget (limits.go).
	queued time.Duration
	// seen is the newest stream sequence of the run this attempt knows:
	// the end of its last read, or its last commit (see view).
	seen uint64
	// lastRequest is the request blob this attempt stored last: the next
	// turn's request, which repeats it and adds the turn's messages, is
	// stored as a delta of it (see bus.Blobs.PutAfter).
	lastRequest *bus.BlobVersion
	// agentVersion is what the external agent's version command printed
	// (external.go), recorded in the claim's identity.
	agentVersion string
	// standing is the run's standing as of the newest log this attempt
	// looked at (stand): each look folds only the facts since the last.
	standing *step.Standing
	// ctlSeen is how many of the run's facts the controls have seen.
	ctlSeen int
	// blobParts are the parts of this run's replies kept in blobs that
	// the attempt stored or read (blobreply.go), under blobMu.
	blobParts map[events.Digest]string
	// resolved are this run's replies with their blob parts read back,
	// by fact, under blobMu.
	resolved map[ulid.ULID]events.ModelReplied
	blobMu   sync.Mutex
}

// renderedTurn is a turn's request and the digest of its rendered body,
// and the storing of that body, which may still be under way.
type renderedTurn struct {
	turn   uint32
	digest events.Digest
	req    models.Request
	stored <-chan storedRequest
}

// storedRequest is how storing a turn's request ended.
type storedRequest struct {
	blob *bus.BlobVersion
	err  error
}

// key is the parts of a runner fact's message ID after its kind: what the
// fact answers (a turn, a call, a control), so that a takeover recommits
// nothing the dead runner committed (events.MessageID).
func key(parts ...any) []string {
	out := make([]string, len(parts))
	for i, p := range parts {
		out[i] = fmt.Sprint(p)
	}
	return out
}

// commit appends one fact of this run as the runner, built against the
// current log so that its position is right even when other services
// appended meanwhile. Its message ID is the fact's kind and the key. It
// refuses to append once another runner holds a newer lease.
func (a *attempt) commit(ctx context.Context, parts []string, body events.Body) (bus.Record, error) {
	body = redactBody(a.svc.secrets, body)
	if r, ok := body.(events.ModelReplied); ok {
		fit, err := a.fitReply(ctx, r)
		if err != nil {
			return bus.Record{}, fmt.Errorf("commit %s: %w", body.Kind(), err)
		}
		body = fit
	}
	claim, claiming := body.(events.RunClaimed)
	recs, err := a.svc.bus.CommitAsLastWriter(ctx, a.svc.runs, a.suite, a.run, func(log bus.RunLog) ([]bus.Pending, error) {
		if err := a.holds(log, claiming); err != nil {
			return nil, err
		}
		if ca, ok := body.(events.ControlAccepted); ok && ca.Control.Signal == events.SignalSteer && a.stand(log).FinishDecided() {
			// A steer is taken in at any point before a finish is
			// committed, and at none after.
			return nil, errFinishDecided
		}
		if claiming {
			// The lease follows the log as it is now: a claim decided on a
			// stale read (a lagging replica) must not reuse a lease number
			// another runner holds.
			a.lease = a.stand(log).Lease() + 1
			claim.Lease = a.lease
			body = claim
		}
		f, err := events.NewFact(events.Meta{
			Suite: a.suite, Run: a.run, TaskGeneration: max(a.gen, 1), Position: log.NextPosition(),
			Causation: lastID(log), Producer: events.Producer{Service: events.OwnerRunner, Instance: a.svc.instance},
		}, body)
		if err != nil {
			return nil, err
		}
		return []bus.Pending{{Fact: f, MsgID: events.MessageID(a.run, body.Kind(), parts...)}}, nil
	})
	if err != nil {
		return bus.Record{}, fmt.Errorf("commit %s: %w", body.Kind(), err)
	}
	if claiming {
		a.claimID = recs[0].MsgID
	}
	a.seen = max(a.seen, recs[0].Seq)
	if a.svc.afterCommit != nil {
		a.svc.afterCommit(recs[0].Fact)
	}
	return recs[0], nil
}

// holds refuses an append once the attempt no longer holds the run: the
// run has ended, or a claim other than this attempt's is the newest.
func (a *attempt) holds(log bus.RunLog, claiming bool) error {
	st := a.stand(log)
	if st.Ended() {
		return fmt.Errorf("%w: %w", ErrLeaseLost, errRunEnded)
	}
	var newest bus.Record
	if i, ok := st.NewestClaim(); ok {
		newest = log.Records[i]
	}
	lease := st.Lease()
	switch {
	case claiming:
		return nil
	case a.claimID != "" && newest.MsgID != a.claimID:
		return fmt.Errorf("%w (lease %d, ours %d)", ErrLeaseLost, lease, a.lease)
	case lease > a.lease:
		return fmt.Errorf("%w (lease %d, ours %d)", ErrLeaseLost, lease, a.lease)
	}
	return nil
}

// stand brings the attempt's standing up to log and returns it. The logs an
// attempt looks at only grow (its view, its commits' decisions, its loads),
// so each look folds only what is new since the last; a log that is no
// extension of the last (a replica behind) is folded whole (step.Standing).
func (a *attempt) stand(log bus.RunLog) *step.Standing {
	if a.standing == nil {
		a.standing = step.NewStanding()
	}
	a.standing.Catch(log.Facts())
	return a.standing
}

// seeControls shows the controls the run's facts since they last looked.
func (a *attempt) seeControls(facts []events.Fact) {
	if a.ctl == nil {
		return
	}
	if a.ctlSeen > len(facts) {
		a.ctlSeen = 0 // a log behind the last: see it all again
	}
	a.ctl.seen(facts[a.ctlSeen:])
	a.ctlSeen = len(facts)
}

// errFinishDecided refuses a steer once the stop decider has committed the
// run's finish: the steer came too late to change the task.
var errFinishDecided = errors.New("the run's finish is already decided")

func lastID(log bus.RunLog) string {
	if n := len(log.Records); n > 0 {
		return log.Records[n-1].Fact.ID.String()
	}
	return ""
}

// view is the run's log for the attempt's next step. Between the facts of
// a turn the runner is the run's only writer, so once the attempt has read
// the log, the cache as its own commits left it is the log: asking the
// server where the run ends before every step would only prove it. A view
// another writer made stale (a takeover's claim) is refused by the next
// commit's expected sequence, which then reads the log again. Where the
// attempt waits for another service's fact it reads the log (load).
func (a *attempt) view(ctx context.Context) (bus.RunLog, error) {
	if a.seen > 0 {
		if log, ok := a.svc.runs.Peek(a.suite, a.run); ok && log.LastSeq >= a.seen {
			return log, nil
		}
	}
	return a.load(ctx)
}

// load reads the run's log, asking the server for facts newer than the
// cache's.
func (a *attempt) load(ctx context.Context) (bus.RunLog, error) {
	log, err := a.svc.runs.Load(ctx, a.suite, a.run)
	if err == nil {
		a.seen = max(a.seen, log.LastSeq)
	}
	return log, err
}

// afterLoopHook is a seam for tests only (export_test.go sets it, for one
// Service, and clears it when the test ends): it is told, when an
// attempt's loop returns, how many facts its standing folded in all and
// how many the run's log held at its last look.
var afterLoopHook atomic.Pointer[func(s *Service, run string, folded int64, facts int)]

// loop runs turns until the stop decider finishes the run or a limit ends
// it. Each pass reads where the run stands and takes the next step.
func (a *attempt) loop(ctx context.Context) (step.Ending, error) {
	if h := afterLoopHook.Load(); h != nil {
		defer func() {
			if a.standing != nil {
				(*h)(a.svc, a.run, a.standing.Folded(), a.standing.Len())
			}
		}()
	}
	for {
		log, err := a.view(ctx)
		if err != nil {
			return step.Ending{}, err
		}
		st := a.stand(log)
		p := st.Progress()
		// The history and the calls need what the model said, whole.
		facts, err := a.resolveReplies(ctx, log.Facts())
		if err != nil {
			return step.Ending{}, err
		}
		if p.Replied, err = a.resolveReply(ctx, p.Replied); err != nil {
			return step.Ending{}, err
		}
		a.gen, a.epoch, a.queued = p.Gen, p.Epoch, time.Duration(st.QueueWaitMs())*time.Millisecond
		if a.ctl != nil {
			a.seeControls(facts)
			if sig := a.ctl.pendingCancel(); sig != nil {
				return a.acceptCancel(ctx, sig)
			}
		}
		if unknown := st.UnknownOperations(); len(unknown) > 0 {
			// Settled with an unknown outcome by an attempt that died before
			// it could end the run: nothing more may happen in it.
			return step.Ending{Status: events.RunNeedsHuman, Reason: unknown[0].Reason()}, nil
		}
		switch next, end := p.Next(); next {
		case step.End:
			return end, nil
		case step.StartTurn:
			if end, held, err := a.atBoundary(ctx); err != nil || end.Ends() {
				return end, err
			} else if held {
				continue // the run waited for its suite: read the log again
			}
			if n, err := a.acceptSteers(ctx, p.Gen); err != nil {
				return step.Ending{}, err
			} else if n > 0 {
				continue // a new generation: read the log again
			}
			if done, end, err := a.condense(ctx, facts, p.Turn+1); err != nil || end.Ends() {
				return end, err
			} else if done {
				continue // the summary is committed: read the log again
			}
			a.status("turn", map[string]any{"turn": p.Turn + 1})
			if end, err := a.startTurn(ctx, facts, st.Spend(), p.Turn+1); err != nil || end.Ends() {
				return end, err
			}
		case step.AskModel:
			if end, err := a.askModel(ctx, facts, p); err != nil || end.Ends() {
				return end, err
			}
		case step.FinishTurn:
			if end, err := a.finishTurn(ctx, st.Spend(), p); err != nil || end.Ends() {
				return end, err
			}
		case step.AwaitDecision:
			if _, err := a.awaitDecision(ctx, p.Turn); err != nil {
				return step.Ending{}, err
			}
		}
	}
}

// turnRequest is a turn's model request built from the facts before it,
// and its size in estimated tokens; or, when the history cannot fit the
// context policy, the run's end instead.
type turnRequest struct {
	req    models.Request
	tokens int
	end    step.Ending
}

// request builds the model request of a turn from the facts before it.
func (a *attempt) request(facts []events.Fact, turn uint32) (turnRequest, error) {
	msgs, tokens, err := history(a.system, a.kase.Instruction, facts, a.eff.Context)
	var ce *step.ContextError
	if errors.As(err, &ce) && ce.Mode == step.ContextSummarise {
		// What is left once summarised does not fit: the budget ran out,
		// as a token limit does.
		return turnRequest{end: step.Exhausted(step.ReasonContextBudget + ": " + ce.Error())}, nil
	}
	if errors.As(err, &ce) {
		return turnRequest{end: step.Ending{Status: events.RunErrored, Reason: "context_budget: " + ce.Error()}}, nil
	}
	if err != nil {
		return turnRequest{}, err
	}
	return turnRequest{req: models.Request{Messages: msgs, Tools: a.registry.Specs(), Settings: a.settings(), Turn: int(turn)}, tokens: tokens}, nil
}

// startTurn checks the limits and commits turn.started with the digest of
// the exact request (stored as a blob). spent is what facts say the run
// spent.
func (a *attempt) startTurn(ctx context.Context, facts []events.Fact, spent step.Spend, turn uint32) (step.Ending, error) {
	if ex, ok := a.model.(interface{ Exhausted(turn int) bool }); ok && ex.Exhausted(int(turn)) {
		return step.Ending{Status: events.RunIncomplete, Reason: ReasonExhausted}, nil
	}
	if wall := a.kase.Budget.Wall.Std(); wall > 0 && a.wallUsed() >= wall {
		return step.Exhausted(ReasonWallLimit), nil
	}
	built, err := a.request(facts, turn)
	if err != nil || built.end.Ends() {
		return built.end, err
	}
	req, tokens := built.req, built.tokens
	reserve := a.model.Reserve(req)
	if reason := step.Preflight(budgetOf(a.kase.Budget), spent, reserve); reason != "" {
		return step.Exhausted(reason), nil
	}
	body, err := a.model.Render(req)
	if err != nil {
		return step.Ending{}, fmt.Errorf("render request: %w", err)
	}
	// The request is stored while turn.started is committed and the model
	// is asked: the writes go to different streams, which the server makes
	// durable side by side, and a model's answer takes longer than either.
	// The reply is committed only once the request is stored, and a runner
	// that takes the turn over before that stores it again (askModel).
	digest := events.DigestOf(body)
	stored := make(chan storedRequest, 1)
	prev := a.lastRequest
	a.lastRequest = nil // until this one is stored
	go func() {
		blob, err := a.svc.bus.Blobs().PutAfter(ctx, body, prev)
		stored <- storedRequest{blob, err}
	}()
	_, err = a.commit(ctx, key(turn), events.TurnStarted{
		Turn: turn, ContextDigest: digest, Messages: uint32(len(req.Messages)), Policy: a.eff.Context.Mode,
		Reserve: reserve, Tokens: uint64(tokens),
	})
	if err == nil {
		a.rendered = &renderedTurn{turn: turn, digest: digest, req: req, stored: stored}
	}
	return step.Ending{}, err
}

// askModel sends a started turn's request and commits the reply. After a
// takeover the request is rebuilt from the facts before turn.started and
// must be byte-identical to the one whose digest was committed.
func (a *attempt) askModel(ctx context.Context, facts []events.Fact, p step.Progress) (step.Ending, error) {
	var req models.Request
	var stored <-chan storedRequest
	if r := a.rendered; r != nil && r.turn == p.Turn && r.digest == p.Started.ContextDigest {
		// This attempt rendered the request and committed its digest:
		// rebuilding and rendering it again, O(history) each, would
		// only prove what the commit already holds.
		req, stored = r.req, r.stored
	} else {
		rebuilt, err := a.request(facts[:p.StartedAt], p.Turn)
		if err != nil || rebuilt.end.Ends() {
			return rebuilt.end, err
		}
		body, err := a.model.Render(rebuilt.req)
		if err != nil {
			return step.Ending{}, fmt.Errorf("render request: %w", err)
		}
		if got := events.DigestOf(body); got != p.Started.ContextDigest {
			return step.Ending{}, fmt.Errorf("turn %d: the rebuilt request is %s, the committed one %s: the history is not reproducible", p.Turn, got, p.Started.ContextDigest)
		}
		// The runner that started the turn stored its request while it
		// asked the model, and may have died before the store was done;
		// a stored request is found and kept as it is.
		blob, err := a.svc.bus.Blobs().PutAfter(ctx, body, nil)
		if err != nil {
			return step.Ending{}, err
		}
		a.lastRequest = blob
		req = rebuilt.req
	}
	a.rendered = nil
	reply, cached, err := a.answer(ctx, req, p.Turn, p.Started.ContextDigest)
	if stored != nil {
		// Whatever the model answered, the request it was sent is kept.
		s := <-stored
		if s.err != nil {
			return step.Ending{}, s.err
		}
		a.lastRequest = s.blob
	}
	if err != nil && ctx.Err() == nil && a.kase.Budget.Wall > 0 && a.wallUsed() >= a.kase.Budget.Wall.Std() {
		return step.Exhausted(ReasonWallLimit), nil
	}
	if err != nil {
		if sig := a.ctl.pendingCancel(); sig != nil {
			return a.acceptCancel(ctx, sig)
		}
		if end := modelEnding(err); end.Ends() {
			return end, nil
		}
		return step.Ending{}, err
	}
	replied := repliedFact(p.Turn, a.model.Provider(), redactReply(a.svc.secrets, reply))
	replied.Cached = cached
	if a.respCache != nil {
		replied.CacheIdentity = a.respCache.identity
	}
	replied.QueueWaitMs = uint64(reply.QueueWait.Milliseconds())
	_, err = a.commit(ctx, key(p.Turn), replied)
	return step.Ending{}, err
}

// finishTurn checks the reply against the budget, settles every call that
// is not settled yet and commits turn.completed. spent is what the run
// spent, as of the progress p.
func (a *attempt) finishTurn(ctx context.Context, spent step.Spend, p step.Progress) (step.Ending, error) {
	if reason := step.Overrun(budgetOf(a.kase.Budget), spent, p.Replied.Usage, p.Started.Reserve); reason != "" {
		return step.Exhausted(reason), nil
	}
	if p.Replied.Finish == models.FinishRefusal {
		return step.Ending{Status: events.RunNeedsHuman, Reason: "model_refused"}, nil
	}
	calls, err := a.dispatchAll(ctx, p)
	if err != nil || calls.end.Ends() {
		return calls.end, err
	}
	if sig := a.ctl.pendingCancel(); sig != nil {
		// A cancel interrupted the reply, at its last call or before
		// another: an interruption never completes a turn.
		return a.acceptCancel(ctx, sig)
	}
	// A steer that came while the turn ran is taken in before the turn is
	// completed: the turn's evidence then belongs to an older generation,
	// and a finish it proposes is stale.
	if _, err := a.acceptSteers(ctx, a.gen); err != nil {
		return step.Ending{}, err
	}
	intent := step.TurnIntent(calls.intent, len(p.Replied.Calls))
	return step.Ending{}, a.completeTurn(ctx, p.Turn, p.TurnGen, intent, calls.dispatches)
}

// modelEnding maps a model error to an honest ending where one applies
// (the zero Ending where none does).
func modelEnding(err error) step.Ending {
	switch models.KindOf(err) {
	case models.ErrExhausted:
		return step.Ending{Status: events.RunIncomplete, Reason: ReasonExhausted}
	case models.ErrRefused:
		return step.Ending{Status: events.RunNeedsHuman, Reason: "model_refused"}
	case "":
		return step.Ending{}
	}
	return step.Ending{Status: events.RunErrored, Reason: "model_error: " + err.Error()}
}

func (a *attempt) callModel(ctx context.Context, req models.Request) (models.Reply, error) {
	ctx, cancel, budget := a.modelContext(ctx)
	defer cancel()
	provider := a.model.Provider()
	t0 := time.Now()
	reply, err := a.model.Complete(ctx, req)
	var waited time.Duration
	if budget != nil {
		// Until the reply records it, a failed call's wait is still not
		// the run's to pay for.
		waited = budget.Waited
		if err != nil {
			a.queued += waited
		}
	}
	metrics.ModelSeconds.WithLabelValues(provider).Observe((time.Since(t0) - waited).Seconds())
	switch {
	case err != nil && a.ctl.pendingCancel() != nil:
		// An operator's cancel stopped the call: no failure of the model.
	case err != nil:
		kind := string(models.KindOf(err))
		if kind == "" {
			kind = "other"
		}
		metrics.ModelErrors.WithLabelValues(provider, kind).Inc()
	case reply.Usage == nil:
		metrics.ModelUnknown.WithLabelValues(provider).Inc()
	default:
		metrics.ModelTokens.WithLabelValues(provider, "input").Add(float64(reply.Usage.InputTokens))
		metrics.ModelTokens.WithLabelValues(provider, "output").Add(float64(reply.Usage.OutputTokens))
	}
	return reply, err
}

// withinWall bounds work (model calls, tool runs, never commits) by the
// attempt's wall-time budget.
func (a *attempt) withinWall(ctx context.Context) (context.Context, context.CancelFunc) {
	if a.work != nil {
		ctx = a.work
	}
	if wall := a.kase.Budget.Wall.Std(); wall > 0 {
		return context.WithTimeout(ctx, wall-a.wallUsed())
	}
	return context.WithCancel(ctx)
}

func (a *attempt) settings() models.Settings {
	s := models.Settings{}
	if a.eff.Treatment != nil {
		m := a.eff.Treatment.Model
		s = models.Settings{Model: m.Name, Temperature: m.Temperature, MaxOutputTokens: m.MaxOutputTokens, Seed: m.Seed,
			TopP: m.TopP, ReasoningEffort: m.ReasoningEffort}
	}
	return s
}

// repliedFact turns a reply into model.replied, with call IDs a fact can
// store (step.NameCalls).
func repliedFact(turn uint32, provider string, r models.Reply) events.ModelReplied {
	calls := make([]events.ToolCall, len(r.Calls))
	for i, c := range r.Calls {
		calls[i] = events.ToolCall{ID: events.CallID(c.ID), Name: c.Name, Args: c.Args, ArgsDigest: events.DigestOf([]byte(c.Args))}
	}
	out := events.ModelReplied{Turn: turn, Provider: provider, Model: r.Model, Text: r.Text, Calls: calls, Finish: r.Finish}
	if u := r.Usage; u != nil {
		out.Usage = &events.Usage{InputTokens: u.InputTokens, OutputTokens: u.OutputTokens, Cost: u.Cost,
			CachedInputTokens: u.CachedInputTokens, ReasoningTokens: u.ReasoningTokens, CacheWriteInputTokens: u.CacheWriteInputTokens}
	}
	step.NameCalls(out.Calls)
	return out
}

// completeTurn commits turn.completed with the run evidence. The evidence
// belongs to the generation the turn started in (what the model was
// asked), even when a steer came in while it ran.
func (a *attempt) completeTurn(ctx context.Context, turn, gen uint32, intent events.ActorIntent, ds []events.CompletedDispatch) error {
	log, err := a.view(ctx)
	if err != nil {
		return err
	}
	_, err = a.commit(ctx, key(turn), events.TurnCompleted{Evidence: events.RunEvidence{
		RunID: a.run, TaskGeneration: max(gen, 1), Turn: turn, EvidencePosition: log.NextPosition(),
		ActorIntent: intent, Dispatches: ds,
	}})
	return err
}

// awaitDecision waits for the stop decider's decision on a turn. The run's
// stop.decided subject wakes it; the log is the truth it reads.
func (a *attempt) awaitDecision(ctx context.Context, turn uint32) (events.StopDecision, error) {
	wake, stop, err := a.svc.bus.WakeOn(a.suite, a.run, events.KindStopDecided)
	if err != nil {
		return events.StopDecision{}, fmt.Errorf("watch decisions: %w", err)
	}
	defer stop()
	deadline := time.NewTimer(a.svc.decisionTimeout)
	defer deadline.Stop()
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	// A subscriber can hear of a fact a moment before the stream serves
	// it (and hears of facts the stream refuses, so the message itself is
	// not trusted): after a wake that finds nothing, look again soon, a few
	// times, before waiting for the tick.
	var pause time.Duration
	for {
		log, err := a.load(ctx)
		if err != nil {
			return events.StopDecision{}, err
		}
		for i := len(log.Records) - 1; i >= 0; i-- {
			if d, ok := log.Records[i].Fact.Body.(events.StopDecided); ok && d.Decision.Turn == turn {
				return d.Decision, nil
			}
		}
		var again <-chan time.Time
		if pause > 0 && pause <= 64*time.Millisecond {
			again = time.After(pause)
			pause *= 2
		}
		select {
		case <-wake:
			pause = 250 * time.Microsecond
		case <-a.ctl.wakeup():
			// A steer that comes while the decider decides is taken in
			// unless the finish is committed first: the decider, finding
			// the new generation, then judges the turn's proposal stale.
			if _, err := a.acceptSteers(ctx, a.gen); err != nil {
				return events.StopDecision{}, err
			}
		case <-again:
		case <-tick.C:
		case <-deadline.C:
			return events.StopDecision{}, fmt.Errorf("no stop decision for turn %d within %v: is the decider running?", turn, a.svc.decisionTimeout)
		case <-ctx.Done():
			return events.StopDecision{}, ctx.Err()
		}
	}
}
