package runner

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/factline/factline/bus"
	"github.com/factline/factline/cases"
	"github.com/factline/factline/events"
	"github.com/factline/factline/models"
	"github.com/factline/factline/services/runner/tools"
)

// ErrLeaseLost means another runner claimed the run after this one: the
// stale runner stops without another effect.
var ErrLeaseLost = errors.New("lease lost: another runner claimed the run")

// ending is how an attempt ends.
type ending struct {
	status events.RunStatus
	reason string
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
	model     models.Model
	registry  *tools.Registry
	ws        Workspace
	env       tools.Env
	started   time.Time
	gen       uint32 // current task generation
	lastTurn  uint32
	epoch     uint64 // source epoch: 1 + applied mutations so far
	dir       string
}

// commit appends one fact of this run as the runner, built against the
// current log so that its position is right even when other services
// appended meanwhile. It refuses to append once another runner holds a newer
// lease.
func (a *attempt) commit(ctx context.Context, msgID string, body events.Body) (bus.Record, error) {
	recs, err := a.svc.bus.Commit(ctx, a.svc.cache, a.suite, a.run, func(log bus.RunLog) ([]bus.Pending, error) {
		if l := currentLease(log); l > a.lease {
			return nil, fmt.Errorf("%w (lease %d, ours %d)", ErrLeaseLost, l, a.lease)
		}
		f, err := events.NewFact(events.Meta{
			Suite: a.suite, Run: a.run, TaskGeneration: max(a.gen, 1), Position: log.NextPosition(),
			Causation: lastID(log), Producer: events.Producer{Service: events.OwnerRunner, Instance: a.svc.instance},
		}, body)
		if err != nil {
			return nil, err
		}
		return []bus.Pending{{Fact: f, MsgID: a.run + "/" + msgID}}, nil
	})
	if err != nil {
		return bus.Record{}, fmt.Errorf("commit %s: %w", body.Kind(), err)
	}
	return recs[0], nil
}

func lastID(log bus.RunLog) string {
	if n := len(log.Records); n > 0 {
		return log.Records[n-1].Fact.ID.String()
	}
	return ""
}

// currentLease is the newest claim's lease in a run.
func currentLease(log bus.RunLog) uint32 {
	var l uint32
	for _, r := range log.Records {
		if c, ok := r.Fact.Body.(events.RunClaimed); ok {
			l = max(l, c.Lease)
		}
	}
	return l
}

// loop runs turns until the stop decider finishes the run or a limit ends it.
func (a *attempt) loop(ctx context.Context) (ending, error) {
	for {
		log, err := a.svc.cache.Load(ctx, a.suite, a.run)
		if err != nil {
			return ending{}, err
		}
		facts := log.Facts()
		a.observeGenerations(facts)
		spend := Tally(facts)
		turn := a.lastTurn + 1

		if ex, ok := a.model.(interface{ Exhausted(turn int) bool }); ok && ex.Exhausted(int(turn)) {
			return ending{events.RunIncomplete, ReasonExhausted}, nil
		}
		if wall := a.kase.Budget.Wall.Std(); wall > 0 && time.Since(a.started) >= wall {
			return ending{events.RunIncomplete, ReasonWallLimit}, nil
		}
		msgs, tokens, err := History(a.instruction(facts), facts, a.eff.Context)
		var ce *ContextError
		if errors.As(err, &ce) {
			return ending{events.RunErrored, "context_budget: " + ce.Error()}, nil
		}
		if err != nil {
			return ending{}, err
		}
		req := models.Request{Messages: msgs, Tools: a.registry.Specs(), Settings: a.settings(), Turn: int(turn)}
		reserve := a.model.Reserve(req)
		if reason := Preflight(a.kase.Budget, spend, reserve); reason != "" {
			return ending{events.RunIncomplete, reason}, nil
		}
		body, err := a.model.Render(req)
		if err != nil {
			return ending{}, fmt.Errorf("render request: %w", err)
		}
		digest, err := a.svc.bus.PutBlob(ctx, body)
		if err != nil {
			return ending{}, err
		}
		if _, err := a.commit(ctx, fmt.Sprintf("t%d/started", turn), events.TurnStarted{
			Turn: turn, ContextDigest: digest, Messages: uint32(len(msgs)), Policy: a.eff.Context.Mode,
			Reserve: reserve, Tokens: uint64(tokens),
		}); err != nil {
			return ending{}, err
		}
		a.lastTurn = turn

		reply, err := a.callModel(ctx, req)
		if err != nil && ctx.Err() == nil && time.Since(a.started) >= a.kase.Budget.Wall.Std() && a.kase.Budget.Wall > 0 {
			return ending{events.RunIncomplete, ReasonWallLimit}, nil
		}
		if err != nil {
			if end, ok := modelEnding(err); ok {
				return end, nil
			}
			return ending{}, err
		}
		replied := repliedFact(turn, a.model.Provider(), reply)
		if _, err := a.commit(ctx, fmt.Sprintf("t%d/replied", turn), replied); err != nil {
			return ending{}, err
		}
		spend.Steps++
		spend.charge(replied.Usage, reserve)
		if reason := Overrun(a.kase.Budget, spend, replied.Usage, reserve); reason != "" {
			return ending{events.RunIncomplete, reason}, nil
		}
		if reply.Finish == models.FinishRefusal {
			return ending{events.RunNeedsHuman, "model_refused"}, nil
		}

		dispatches, intent, err := a.dispatchAll(ctx, turn, replied)
		if err != nil {
			return ending{}, err
		}
		if intent == nil {
			in := events.Continue()
			if len(replied.Calls) == 0 {
				// A natural finish is a proposal too; the decider judges it.
				in = events.ProposeDone()
			}
			intent = &in
		}
		if err := a.completeTurn(ctx, turn, *intent, dispatches); err != nil {
			return ending{}, err
		}
		decision, err := a.awaitDecision(ctx, turn)
		if err != nil {
			return ending{}, err
		}
		if fin, ok := decision.Result.Variant().(events.StopFinish); ok {
			return ending{runStatus(fin.Status), fin.Reason}, nil
		}
	}
}

func runStatus(s events.FinishStatus) events.RunStatus {
	switch s {
	case events.FinishDone:
		return events.RunDone
	case events.FinishBlocked:
		return events.RunBlocked
	}
	return events.RunIncomplete
}

// modelEnding maps a model error to an honest ending where one applies.
func modelEnding(err error) (ending, bool) {
	switch models.KindOf(err) {
	case models.ErrExhausted:
		return ending{events.RunIncomplete, ReasonExhausted}, true
	case models.ErrRefused:
		return ending{events.RunNeedsHuman, "model_refused"}, true
	case "":
		return ending{}, false
	}
	return ending{events.RunErrored, "model_error: " + err.Error()}, true
}

func (a *attempt) callModel(ctx context.Context, req models.Request) (models.Reply, error) {
	ctx, cancel := a.withinWall(ctx)
	defer cancel()
	return a.model.Complete(ctx, req)
}

// withinWall bounds work (model calls, tool runs, never commits) by the
// attempt's wall-time budget.
func (a *attempt) withinWall(ctx context.Context) (context.Context, context.CancelFunc) {
	if wall := a.kase.Budget.Wall.Std(); wall > 0 {
		return context.WithDeadline(ctx, a.started.Add(wall))
	}
	return context.WithCancel(ctx)
}

func (a *attempt) settings() models.Settings {
	s := models.Settings{}
	if a.eff.Treatment != nil {
		m := a.eff.Treatment.Model
		s = models.Settings{Model: m.Name, Temperature: m.Temperature, MaxOutputTokens: m.MaxOutputTokens, Seed: m.Seed}
	}
	return s
}

// instruction is the task as first given; steers arrive as their own
// messages.
func (a *attempt) instruction(facts []events.Fact) string { return a.kase.Instruction }

// observeGenerations tracks the current task generation from the log.
func (a *attempt) observeGenerations(facts []events.Fact) {
	for _, f := range facts {
		if g, ok := f.Body.(events.TaskGenerationStarted); ok {
			a.gen = max(a.gen, g.Generation)
		}
	}
}

// repliedFact turns a reply into model.replied.
func repliedFact(turn uint32, provider string, r models.Reply) events.ModelReplied {
	calls := make([]events.ToolCall, len(r.Calls))
	for i, c := range r.Calls {
		calls[i] = events.ToolCall{ID: events.CallID(c.ID), Name: c.Name, Args: c.Args, ArgsDigest: events.DigestOf([]byte(c.Args))}
	}
	out := events.ModelReplied{Turn: turn, Provider: provider, Model: r.Model, Text: r.Text, Calls: calls, Finish: r.Finish}
	if u := r.Usage; u != nil {
		out.Usage = &events.Usage{InputTokens: u.InputTokens, OutputTokens: u.OutputTokens, Cost: u.Cost}
	}
	// Duplicate call IDs cannot be stored as they came (a fact refuses
	// them); later duplicates get a suffix and are answered with a typed
	// error observation instead.
	seen := map[events.CallID]int{}
	for i := range out.Calls {
		id := out.Calls[i].ID
		if id == "" {
			id = events.CallID(fmt.Sprintf("call-%d", i+1))
			out.Calls[i].ID = id
		}
		if n := seen[id]; n > 0 {
			out.Calls[i].ID = events.CallID(fmt.Sprintf("%s#dup%d", id, n))
		}
		seen[id]++
	}
	return out
}

// isDuplicate reports whether a stored call ID is a renamed duplicate.
func isDuplicate(id events.CallID) bool { return strings.Contains(string(id), "#dup") }

// completeTurn commits turn.completed with the run evidence.
func (a *attempt) completeTurn(ctx context.Context, turn uint32, intent events.ActorIntent, ds []events.CompletedDispatch) error {
	log, err := a.svc.cache.Load(ctx, a.suite, a.run)
	if err != nil {
		return err
	}
	_, err = a.commit(ctx, fmt.Sprintf("t%d/completed", turn), events.TurnCompleted{Evidence: events.RunEvidence{
		RunID: a.run, TaskGeneration: max(a.gen, 1), Turn: turn, EvidencePosition: log.NextPosition(),
		ActorIntent: intent, Dispatches: ds,
	}})
	return err
}

// awaitDecision waits for the stop decider's decision on a turn. The run's
// stop.decided subject wakes it; the log is the truth it reads.
func (a *attempt) awaitDecision(ctx context.Context, turn uint32) (events.StopDecision, error) {
	subj, _ := events.FactSubject(a.suite, a.run, events.KindStopDecided)
	wake := make(chan struct{}, 1)
	sub, err := a.svc.bus.Conn().Subscribe(subj, func(_ *nats.Msg) {
		select {
		case wake <- struct{}{}:
		default:
		}
	})
	if err != nil {
		return events.StopDecision{}, fmt.Errorf("watch decisions: %w", err)
	}
	defer sub.Unsubscribe()
	deadline := time.NewTimer(a.svc.decisionTimeout)
	defer deadline.Stop()
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		log, err := a.svc.cache.Load(ctx, a.suite, a.run)
		if err != nil {
			return events.StopDecision{}, err
		}
		for i := len(log.Records) - 1; i >= 0; i-- {
			if d, ok := log.Records[i].Fact.Body.(events.StopDecided); ok && d.Decision.Turn == turn {
				return d.Decision, nil
			}
		}
		select {
		case <-wake:
		case <-tick.C:
		case <-deadline.C:
			return events.StopDecision{}, fmt.Errorf("no stop decision for turn %d within %v: is the decider running?", turn, a.svc.decisionTimeout)
		case <-ctx.Done():
			return events.StopDecision{}, ctx.Err()
		}
	}
}
