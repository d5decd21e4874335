package measure

import (
	"fmt"
	"slices"
	"strings"

	"github.com/factline/factline/events"
	"github.com/factline/factline/projections"
	"github.com/factline/factline/stats"
)

// Outcome is where an attempt lands in the report. The outcomes are
// mutually exclusive; docs/report.md says how each is decided.
type Outcome string

// Outcomes of an attempt.
const (
	OutcomePassed    Outcome = "passed"
	OutcomeFailed    Outcome = "failed"
	OutcomePending   Outcome = "pending"
	OutcomeInvalid   Outcome = "invalid"
	OutcomeAbstained Outcome = "abstained"
	OutcomeExcluded  Outcome = "excluded"
	// OutcomeDisputed: the grade counted has an unresolved grade.conflict
	// (a later check disagreed with it and no later revision settled the
	// disagreement). It is neither passed nor failed, and a suite with one
	// is not complete.
	OutcomeDisputed Outcome = "disputed"
	// OutcomeAwaiting: not settled yet (not ended, or ended and not yet
	// graded). A complete report has none.
	OutcomeAwaiting Outcome = "awaiting"
)

// Method records how the report's statistics were computed.
type Method struct {
	Z                  float64 `json:"z"`
	Interval           string  `json:"interval"`
	BootstrapResamples int     `json:"bootstrap_resamples"`
	BootstrapSeed      uint64  `json:"bootstrap_seed"`
}

// Units names the unit of each usage figure of a report, so that a
// reader of its JSON need not guess: tokens are tokens, cost is in the
// integer cost units that prices (per million tokens) and budgets are
// declared in (docs/models.md), wall time in milliseconds, turns in model
// turns (each one model call).
type Units struct {
	Tokens string `json:"tokens"`
	Cost   string `json:"cost"`
	Wall   string `json:"wall"`
	Turns  string `json:"turns"`
}

// The units of every report.
const (
	UnitTokens = "tokens"
	UnitCost   = "cost units"
	UnitWall   = "ms"
	UnitTurns  = "model turns"
)

// reportUnits are the units of every report.
var reportUnits = Units{Tokens: UnitTokens, Cost: UnitCost, Wall: UnitWall, Turns: UnitTurns}

// Report is the meter stick's account of one suite.
type Report struct {
	Suite         string                `json:"suite"`
	Name          string                `json:"name"`
	Split         string                `json:"split"`
	SpecDigest    events.Digest         `json:"spec_digest"`
	Trials        uint32                `json:"trials"`
	Cases         []string              `json:"cases"`
	Required      []events.InstrumentID `json:"required,omitempty"`
	ValidOutcomes []events.RunStatus    `json:"valid_outcomes"`
	// Complete is true when every planned attempt is settled: ended and
	// graded (or terminally pending), or excluded, and no grade it counts
	// is disputed by an unresolved grade.conflict.
	Complete bool `json:"complete"`
	// Smoke is true for a suite of one trial: a smoke read that shows the
	// measurement path is live, not a quality claim (seed 000), which
	// needs repeated trials.
	Smoke bool `json:"smoke"`
	// StoppedEarly is the suite's suite.stopped, when its stopping rule
	// settled the comparison before every run was run: runs not yet
	// started then end cancelled (reason suite_stopped) and are excluded.
	StoppedEarly *events.SuiteStopped `json:"stopped_early,omitempty"`
	// Controlled lists the operator's controls of the suite
	// (suite.controlled: who, when, why), in log order, and ControlState
	// is where they left it; both absent for a suite never controlled.
	// A drained or cancelled suite is complete with what ran: its
	// attempts never run are excluded (NotRun), never counted.
	Controlled   []projections.Control  `json:"controlled,omitempty"`
	ControlState projections.SuiteState `json:"control_state,omitempty"`
	// NotRun counts the planned attempts that never ran (the suite
	// stopped early, or was drained or cancelled before they started).
	NotRun      int               `json:"not_run,omitempty"`
	Method      Method            `json:"method"`
	Units       Units             `json:"units"`
	Treatments  []TreatmentReport `json:"treatments"`
	Comparisons []Comparison      `json:"comparisons"`
	Attempts    []AttemptRow      `json:"attempts"`
}

// TreatmentReport is one treatment's row of the report.
type TreatmentReport struct {
	Treatment string `json:"treatment"`
	// Harness is the agent harness its attempts ran under (harnessOf):
	// "built-in", or "external (<command>)" for an external agent, whose
	// evidence is of another class (its model calls and its workspace, no
	// dispatches). Empty until an attempt is requested.
	Harness       string `json:"harness,omitempty"`
	Planned       int    `json:"planned"`
	Started       int    `json:"started"`
	Ended         int    `json:"ended"`
	Graded        int    `json:"graded"`
	Passed        int    `json:"passed"`
	Failed        int    `json:"failed"`
	Pending       int    `json:"pending"`
	Invalid       int    `json:"invalid"`
	Abstained     int    `json:"abstained"`
	Excluded      int    `json:"excluded"`
	HarnessErrors int    `json:"harness_errors"`
	Awaiting      int    `json:"awaiting"`
	// Retried counts planned attempts that were run again after a
	// harness error (their earlier runs are listed in the attempt rows).
	Retried int `json:"retried"`
	// Disputed counts attempts whose counted grade has an unresolved
	// grade.conflict; Conflicted those with any conflict, resolved or not.
	Disputed   int `json:"disputed"`
	Conflicted int `json:"conflicted"`
	// PassRate is passed / graded; nil when nothing was graded.
	PassRate *float64 `json:"pass_rate"`
	// Wilson is the 95% Wilson score interval of PassRate.
	Wilson *stats.Interval `json:"wilson"`
	// ClusteredSE is the case-clustered standard error of PassRate, with
	// repeated trials and at least two cases graded.
	ClusteredSE *float64  `json:"clustered_se"`
	PassAtK     []PassAtK `json:"pass_at_k,omitempty"`
	// Usage is what the agents under test consumed; Evaluator what
	// grading and reviewing them did (judge model calls), kept apart so
	// that evaluation never inflates an agent's cost (seed 004).
	Usage     Usage          `json:"usage"`
	Evaluator EvaluatorUsage `json:"evaluator"`
	// Context is the part of Usage the ended attempts' context summaries
	// consumed (context policy summarise): absent when none was made.
	Context *ContextUsage `json:"context,omitempty"`
	// Delegation is the part of Usage the ended attempts' child runs
	// consumed, beside their own: absent when none delegated.
	Delegation *DelegationUsage `json:"delegation,omitempty"`
	// RetriedUsage is what the runs a retry replaced consumed: Usage
	// counts each attempt by its newest run, and spend is spend, so the
	// runs before it are summed here, apart; absent when none ended.
	RetriedUsage *RetriedUsage `json:"retried_usage,omitempty"`
	// Scores summarise each scorer the treatment's grades name
	// (docs/report.md#scores); absent when none does.
	Scores []ScorerSummary `json:"scores,omitempty"`
}

// RetriedUsage sums the ended runs a retry replaced (factline retry):
// their tokens and cost, each unknown one counted apart and never as 0,
// their wall time and their model turns.
type RetriedUsage struct {
	Runs          int     `json:"runs"`
	Tokens        *uint64 `json:"tokens"`
	TokensUnknown int     `json:"tokens_unknown"`
	Cost          *uint64 `json:"cost"`
	CostUnknown   int     `json:"cost_unknown"`
	WallMillis    uint64  `json:"wall_millis"`
	Turns         uint64  `json:"turns"`
}

// add sums one replaced run's spend.
func (u *RetriedUsage) add(e EarlierRun) {
	u.Runs++
	sumKnown(&u.Tokens, e.Tokens, nil, &u.TokensUnknown)
	sumKnown(&u.Cost, e.Cost, nil, &u.CostUnknown)
	if e.Millis != nil {
		u.WallMillis += *e.Millis
	}
	if e.Turns != nil {
		u.Turns += uint64(*e.Turns)
	}
}

// CallUsage sums model calls: how many, their tokens and their cost. A
// call whose usage is unknown is counted apart, never as zero.
type CallUsage struct {
	Calls         int     `json:"calls"`
	Tokens        *uint64 `json:"tokens"`
	TokensUnknown int     `json:"tokens_unknown"`
	Cost          *uint64 `json:"cost"`
	CostUnknown   int     `json:"cost_unknown"`
}

// add folds one call's usage (nil: unknown).
func (c *CallUsage) add(u *events.Usage) {
	c.Calls++
	if u == nil {
		c.TokensUnknown++
		c.CostUnknown++
		return
	}
	add(&c.Tokens, u.InputTokens+u.OutputTokens)
	sumKnown(&c.Cost, u.Cost, nil, &c.CostUnknown)
}

// EvaluatorUsage sums the evaluators' model calls on a treatment's
// attempts: the grader's judge instruments and the stop decider's
// reviewer, and the time they took.
type EvaluatorUsage struct {
	CallUsage
	Millis uint64 `json:"millis"`
}

// ContextUsage sums the context summaries of a treatment's ended
// attempts: model calls of the agent itself (their tokens and cost are
// part of Usage) shown apart, so that what a condenser costs is seen.
type ContextUsage struct {
	CallUsage
}

// PassAtK is the mean unbiased pass@k over the cases with at least k graded
// trials.
type PassAtK struct {
	K     int     `json:"k"`
	Value float64 `json:"value"`
	Cases int     `json:"cases"`
}

// Usage is what a treatment's ended attempts consumed. An attempt whose
// tokens or cost are unknown is counted in the Unknown field and adds
// nothing to the total; a total is nil (null in JSON, an empty CSV cell)
// when no attempt's figure is known: unknown never becomes zero.
type Usage struct {
	Tokens        *uint64 `json:"tokens"`
	TokensKnown   int     `json:"tokens_known"`
	TokensUnknown int     `json:"tokens_unknown"`
	Cost          *uint64 `json:"cost"`
	CostKnown     int     `json:"cost_known"`
	CostUnknown   int     `json:"cost_unknown"`
	WallMillis    uint64  `json:"wall_millis"`
	WallKnown     int     `json:"wall_known"`
	// CachedCalls counts the ended attempts' model calls the response
	// cache answered (billed nothing), and CachedTokens their tokens: part
	// of Tokens, served without calling the model.
	CachedCalls  int    `json:"cached_calls"`
	CachedTokens uint64 `json:"cached_tokens"`
	// InputTokens and OutputTokens split Tokens, summed over the
	// SplitKnown attempts whose replies account for their spent tokens;
	// SplitUnknown counts the ended attempts whose split is not known.
	InputTokens  *uint64 `json:"input_tokens"`
	OutputTokens *uint64 `json:"output_tokens"`
	SplitKnown   int     `json:"split_known"`
	SplitUnknown int     `json:"split_unknown"`
	// CachedInputTokens is the part of InputTokens the provider read from
	// its prompt cache and ReasoningTokens the part of OutputTokens spent
	// on hidden reasoning, each summed over the attempts whose every reply
	// reported it (CachedInputKnown, ReasoningKnown); nil when none did.
	CachedInputTokens *uint64 `json:"cached_input_tokens"`
	CachedInputKnown  int     `json:"cached_input_known"`
	ReasoningTokens   *uint64 `json:"reasoning_tokens"`
	ReasoningKnown    int     `json:"reasoning_known"`
	// Turns sums the ended attempts' model turns (run.ended's spent.steps).
	Turns uint64 `json:"turns"`
}

// add sums a known figure into a total that is nil until one is known.
func add(total **uint64, v uint64) {
	if *total == nil {
		*total = new(uint64)
	}
	**total += v
}

// sumKnown adds v to total when it is known, counting it in known, and
// otherwise counts it in unknown: an unknown figure never adds a zero. A
// nil counter is one the caller does not keep.
func sumKnown(total **uint64, v *uint64, known, unknown *int) {
	counter := unknown
	if v != nil {
		add(total, *v)
		counter = known
	}
	if counter != nil {
		*counter++
	}
}

// AttemptRow is one planned attempt and where it landed.
type AttemptRow struct {
	Run       string           `json:"run"`
	Case      string           `json:"case"`
	Treatment string           `json:"treatment"`
	Trial     uint32           `json:"trial"`
	Identity  events.Digest    `json:"identity,omitempty"`
	Started   bool             `json:"started"`
	Status    events.RunStatus `json:"status,omitempty"`
	Outcome   Outcome          `json:"outcome"`
	Reason    string           `json:"reason,omitempty"`
	// NotRun: the attempt never ran (its suite stopped early, or was
	// drained or cancelled before it started): excluded, never counted.
	NotRun    bool    `json:"not_run,omitempty"`
	Revision  uint32  `json:"revision,omitempty"`
	Conflicts int     `json:"conflicts,omitempty"`
	Tokens    *uint64 `json:"tokens,omitempty"`
	Cost      *uint64 `json:"cost,omitempty"`
	Millis    *uint64 `json:"millis,omitempty"`
	// EndReason is the reason of the run's run.ended, as the runner gave
	// it (why a harness error was one), once the run has ended.
	EndReason string `json:"end_reason,omitempty"`
	// Delegation is what the attempt's child runs consumed, beside its
	// own calls (absent: it delegated nothing). Tokens and Cost count both.
	Delegation *DelegationUsage `json:"delegation,omitempty"`
	// Turns is the model turns the run took (spent.steps).
	Turns *uint32 `json:"turns,omitempty"`
	// InputTokens and OutputTokens split Tokens when the run's replies
	// account for it; CachedInputTokens and ReasoningTokens are their
	// parts when every reply reported them. Absent: unknown.
	InputTokens       *uint64 `json:"input_tokens,omitempty"`
	OutputTokens      *uint64 `json:"output_tokens,omitempty"`
	CachedInputTokens *uint64 `json:"cached_input_tokens,omitempty"`
	ReasoningTokens   *uint64 `json:"reasoning_tokens,omitempty"`
	// CachedCalls and CachedTokens are the attempt's model calls the
	// response cache answered, and their tokens.
	CachedCalls  int    `json:"cached_calls,omitempty"`
	CachedTokens uint64 `json:"cached_tokens,omitempty"`
	// Scores are the scores of the grade the row counts, when its case
	// declares scorers.
	Scores []events.Score `json:"scores,omitempty"`
	// Judged is the evaluators' model calls on the attempt, summed into
	// the treatment's evaluator usage.
	Judged []events.JudgeCall `json:"-"`
	// Summaries is the usage of the attempt's context summaries, summed
	// into the treatment's context usage.
	Summaries []*events.Usage `json:"-"`
	// FirstVeto is the counted grade's first veto, when it has one: what
	// a JUnit failure says (WriteJUnit). Kept out of the report's JSON,
	// whose digest suite.reported names.
	FirstVeto *events.GradeVeto `json:"-"`
	// Retried lists the earlier runs of this planned attempt, oldest
	// first, when it was retried (factline retry): the row is the newest
	// run's, and the earlier ones are never hidden.
	Retried []EarlierRun `json:"retried,omitempty"`
}

// EarlierRun is a run of a planned attempt that a retry replaced.
type EarlierRun struct {
	Run    string           `json:"run"`
	Status events.RunStatus `json:"status,omitempty"`
	Reason string           `json:"reason,omitempty"`
	// What the run spent, as an attempt row's figures (absent: unknown,
	// or the run never ended); summed into the treatment's RetriedUsage.
	Tokens *uint64 `json:"tokens,omitempty"`
	Cost   *uint64 `json:"cost,omitempty"`
	Millis *uint64 `json:"millis,omitempty"`
	Turns  *uint32 `json:"turns,omitempty"`
}

// newestRow classifies a planned attempt by its newest run, following its
// retries, and lists the runs they replaced.
func (l *Log) newestRow(m Member, valid []events.RunStatus, required []events.InstrumentID, children map[string][]*Attempt) AttemptRow {
	var earlier []EarlierRun
	seen := map[string]bool{m.Run: true}
	for next, ok := l.RetriedBy[m.Run]; ok && !seen[next]; next, ok = l.RetriedBy[m.Run] {
		e := EarlierRun{Run: m.Run}
		if a := l.Runs[m.Run]; a != nil && a.endOf() != nil {
			e.Status, e.Reason = a.endOf().status, a.endOf().reason
			if end, ok := a.Ended(); ok {
				sp := end.Spent
				e.Tokens, e.Cost, e.Millis, e.Turns = sp.Tokens, sp.Cost, ptr(sp.Millis), ptr(sp.Steps)
			}
		}
		earlier = append(earlier, e)
		seen[next] = true
		m.Run = next
	}
	r := row(m, l.Runs[m.Run], valid, required)
	r.Retried = earlier
	delegationOf(&r, l.Runs[m.Run], children[m.Run])
	return r
}

// DelegationUsage is what an attempt's child runs (delegate calls)
// consumed, apart from what its own model calls did: the row's (or the
// treatment's) tokens and cost are the two together, each child counted
// once. A figure is nil where any call of its part reported none.
type DelegationUsage struct {
	// Children counts the child runs.
	Children    int     `json:"children"`
	OwnTokens   *uint64 `json:"own_tokens"`
	ChildTokens *uint64 `json:"child_tokens"`
	OwnCost     *uint64 `json:"own_cost"`
	ChildCost   *uint64 `json:"child_cost"`
}

// childrenOf maps each run with child runs to them (nil when none has
// any): looked up a row at a time, where a walk of every run for each
// row made a suite's report cost its runs squared.
func (l *Log) childrenOf() map[string][]*Attempt {
	var out map[string][]*Attempt
	for _, a := range l.Runs {
		p := a.Parent()
		if p == nil {
			continue
		}
		if out == nil {
			out = map[string][]*Attempt{}
		}
		out[p.Run] = append(out[p.Run], a)
	}
	return out
}

// delegationOf sets the row of an attempt with child runs (kids, in any
// order: their usage is summed): their usage apart from its own, and the
// input/output split of the two together (which its spent tokens count).
func delegationOf(r *AttemptRow, a *Attempt, kids []*Attempt) {
	if a == nil || len(kids) == 0 {
		return
	}
	var children ReplyUsage
	n := len(kids)
	for _, c := range kids {
		children = children.plus(c.Replies())
	}
	d := &DelegationUsage{Children: n}
	tokens := func(u ReplyUsage) *uint64 {
		if u.Unknown > 0 {
			return nil
		}
		return ptr(u.Input + u.Output)
	}
	cost := func(u ReplyUsage) *uint64 {
		if u.CostUnknown > 0 {
			return nil
		}
		return ptr(u.Cost)
	}
	own := a.Replies()
	d.OwnTokens, d.ChildTokens, d.OwnCost, d.ChildCost = tokens(own), tokens(children), cost(own), cost(children)
	r.Delegation = d
	if e, ok := a.Ended(); ok {
		r.InputTokens, r.OutputTokens, r.CachedInputTokens, r.ReasoningTokens = nil, nil, nil, nil
		r.split(own.plus(children), e.Spent.Tokens)
	}
}

// add sums an attempt's delegation usage into a treatment's: a figure
// unknown for any attempt is unknown for the treatment.
func (d *DelegationUsage) add(o *DelegationUsage) {
	first := d.Children == 0
	d.Children += o.Children
	sum := func(total **uint64, v *uint64) {
		switch {
		case first && v != nil:
			*total = ptr(*v)
		case first, v == nil, *total == nil:
			*total = nil
		default:
			**total += *v
		}
	}
	sum(&d.OwnTokens, o.OwnTokens)
	sum(&d.ChildTokens, o.ChildTokens)
	sum(&d.OwnCost, o.OwnCost)
	sum(&d.ChildCost, o.ChildCost)
}

func ptr[T any](v T) *T { return &v }

// Build computes the report of a suite from its folded facts. The result
// depends only on the facts, never on the order runs interleaved in: the
// same graded attempts always give the same report.
func Build(l *Log) Report {
	r := Report{Suite: l.Suite, Method: Method{Z: stats.Z95, Interval: "wilson",
		BootstrapResamples: stats.DefaultResamples, BootstrapSeed: stats.DefaultSeed}, Units: reportUnits}
	if l.Submitted == nil {
		return r
	}
	s := *l.Submitted
	valid := s.ValidOutcomes
	if len(valid) == 0 {
		valid = defaultValid
	}
	r.Name, r.Split, r.SpecDigest, r.Trials, r.Required, r.ValidOutcomes = s.Name, s.Split, s.SpecDigest, s.Trials, s.Required, valid
	for _, c := range s.Cases {
		r.Cases = append(r.Cases, c.ID)
	}
	children := l.childrenOf()
	if n := Size(s); n > 0 {
		// Sized once: grown by appends, the rows of a large suite were
		// copied a dozen times and held up to twice over. (A roster past
		// any a meter runs is only read, and grows.)
		r.Attempts = make([]AttemptRow, 0, min(n, maxRowsSized))
	}
	for m := range Members(s) {
		r.Attempts = append(r.Attempts, l.newestRow(m, valid, s.Required, children))
	}
	r.Complete, r.Smoke, r.StoppedEarly = true, s.Trials == 1, l.Stopped
	if len(l.Control.Controls) > 0 {
		r.Controlled, r.ControlState = l.Control.Controls, l.Control.State
	}
	for i, a := range r.Attempts {
		if a.Outcome == OutcomeAwaiting && l.Runs[a.Run] == nil && l.Control.Ends() {
			notRun(&r.Attempts[i], l.Control.State)
			a = r.Attempts[i]
		}
		if a.NotRun {
			r.NotRun++
		}
		if a.Outcome == OutcomeAwaiting || a.Outcome == OutcomeDisputed {
			r.Complete = false
		}
	}
	for _, t := range s.Treatments {
		tr := treatmentReport(t.ID, r.Attempts, s.Trials)
		tr.Scores = scoreSummaries(t.ID, r.Attempts)
		tr.Harness = harnessOf(t.ID, r.Attempts, l.Runs)
		r.Treatments = append(r.Treatments, tr)
	}
	for i := range s.Treatments {
		for j := i + 1; j < len(s.Treatments); j++ {
			r.Comparisons = append(r.Comparisons, Compare(r.Attempts, l.Runs, s.Treatments[i].ID, s.Treatments[j].ID))
		}
	}
	return r
}

// maxRowsSized bounds the rows Build sizes its report for at once: above
// the largest suite the meter runs (suites.MaxRuns), so that a forged
// roster's size is never allocated on its word.
const maxRowsSized = 1 << 17

// notRun settles a planned attempt that never ran because its suite was
// drained or cancelled: excluded, never counted (not failed, not in any
// rate).
func notRun(r *AttemptRow, state projections.SuiteState) {
	r.Outcome, r.Reason, r.NotRun = OutcomeExcluded, "not run: the suite was "+string(state), true
}

// defaultValid are the valid outcomes of a suite that names none (the same
// as suites.DefaultValidOutcomes, which this core cannot import).
var defaultValid = []events.RunStatus{events.RunDone, events.RunBlocked, events.RunIncomplete, events.RunExhausted, events.RunNeedsHuman}

// row classifies one planned attempt.
func row(m Member, a *Attempt, valid []events.RunStatus, required []events.InstrumentID) AttemptRow {
	out := AttemptRow{Run: m.Run, Case: m.Case, Treatment: m.Treatment, Trial: m.Trial, Outcome: OutcomeAwaiting}
	if a == nil {
		out.Reason = "not requested yet"
		return out
	}
	if a.Requested != nil {
		out.Identity = a.Requested.Identity
	}
	out.Started, out.Conflicts, out.Judged, out.Summaries = a.Claimed(), len(a.Conflicts()), a.Judged(), a.Summaries()
	out.CachedCalls, out.CachedTokens = a.Cached()
	e, ended := a.Ended()
	if !ended {
		out.Reason = "running"
		if !a.Claimed() {
			out.Reason = "not started"
		}
		return out
	}
	out.Status, out.EndReason, out.Tokens, out.Cost, out.Millis = e.Status, e.Reason, e.Spent.Tokens, e.Spent.Cost, ptr(e.Spent.Millis)
	out.Turns = ptr(e.Spent.Steps)
	out.split(a.Replies(), e.Spent.Tokens)
	if e.Status == events.RunCancelled && e.Reason == events.ReasonSuiteStopped {
		// Never run: whatever the suite counts, it says nothing of the agent.
		out.Outcome, out.Reason, out.NotRun = OutcomeExcluded, "not run: the suite stopped early", true
		return out
	}
	if e.Status == events.RunCancelled && !a.Claimed() && (e.Reason == events.ReasonSuiteDrained || e.Reason == events.ReasonSuiteCancelled) {
		state := projections.SuiteDrained
		if e.Reason == events.ReasonSuiteCancelled {
			state = projections.SuiteCancelled
		}
		notRun(&out, state)
		return out
	}
	if !slices.Contains(valid, e.Status) {
		out.Outcome, out.Reason = OutcomeExcluded, fmt.Sprintf("ended %s (%s), not a valid outcome of this suite", e.Status, e.Reason)
		return out
	}
	v, ok := verdictOf(a)
	if !ok {
		out.Reason = "awaiting its grade"
		return out
	}
	out.Revision = v.Revision
	if c, ok := unresolved(v, a.Conflicts()); ok {
		out.Outcome = OutcomeDisputed
		out.Reason = fmt.Sprintf("grade.conflict: revision %d disagrees with revision %d on %s (%s); a later revision that agrees settles it",
			c.Revision, c.ConflictsWith, c.Instrument, c.Reason)
		return out
	}
	out.Scores = v.Scores
	if len(v.Vetoes) > 0 {
		out.FirstVeto = &v.Vetoes[0]
	}
	switch res := v.Result.Variant().(type) {
	case events.VerdictPassed, events.VerdictFailed:
		out.Outcome = OutcomePassed
		if _, f := res.(events.VerdictFailed); f {
			out.Outcome = OutcomeFailed
		}
		if missing := missingRequired(v, required); len(missing) > 0 {
			out.Outcome = OutcomePending
			out.Reason = "the grade lacks the suite's required instruments " + strings.Join(missing, ", ")
		}
	case events.VerdictPending:
		out.Outcome = OutcomePending
		ids := make([]string, len(res.Instruments))
		for i, id := range res.Instruments {
			ids[i] = string(id)
		}
		out.Reason = "no result from " + strings.Join(ids, ", ")
	case events.VerdictInvalid:
		out.Outcome, out.Reason = OutcomeInvalid, res.Reason
	case events.VerdictAbstained:
		out.Outcome, out.Reason = OutcomeAbstained, res.Reason
	}
	return out
}

// split sets the attempt's input and output tokens, and the parts of them
// every reply reported, when its replies account for the tokens it spent:
// each had usage and together they make spent.tokens. Where they do not (a
// log without the replies, a reply without usage) the split stays
// unknown rather than guessed.
func (out *AttemptRow) split(r ReplyUsage, tokens *uint64) {
	if tokens == nil || r.Unknown > 0 || r.Input+r.Output != *tokens {
		return
	}
	out.InputTokens, out.OutputTokens = ptr(r.Input), ptr(r.Output)
	if r.CachedInputUnknown == 0 {
		out.CachedInputTokens = ptr(r.CachedInput)
	}
	if r.ReasoningUnknown == 0 {
		out.ReasoningTokens = ptr(r.Reasoning)
	}
}

// verdictOf returns the grade the report counts: the newest revision for
// the newest sealed candidate, or, when no candidate was sealed, the grade
// of the run without one.
func verdictOf(a *Attempt) (events.GraderVerdict, bool) {
	if v, ok := a.sealedGrade(); ok {
		return v, true
	}
	verdicts := a.Verdicts()
	if snapshot := a.Snapshot(); snapshot != "" {
		i := slices.IndexFunc(verdicts, func(v events.GraderVerdict) bool { return v.SnapshotID == snapshot })
		if i < 0 {
			return events.GraderVerdict{}, false
		}
		return verdicts[i], true
	}
	var best events.GraderVerdict
	found := false
	for _, v := range verdicts {
		if !found || v.Revision > best.Revision || v.Revision == best.Revision && v.SnapshotID < best.SnapshotID {
			best, found = v, true
		}
	}
	return best, found
}

// unresolved returns the newest conflict that disputes the counted grade:
// one on its snapshot at its revision or later (a conflict the grader
// appended with a revision whose verdict is not folded yet disputes it
// too). A later revision that appended no conflict of its own settled the
// ones before it.
func unresolved(v events.GraderVerdict, conflicts []events.GradeConflict) (events.GradeConflict, bool) {
	var out events.GradeConflict
	found := false
	for _, c := range conflicts {
		if c.SnapshotDigest == v.SnapshotID && c.Revision >= v.Revision && (!found || c.Revision >= out.Revision) {
			out, found = c, true
		}
	}
	return out, found
}

// missingRequired lists the suite's required instruments that a definitive
// grade does not rest on as required, passed-or-failed results.
func missingRequired(v events.GraderVerdict, required []events.InstrumentID) []string {
	var out []string
	for _, id := range required {
		ok := false
		for _, r := range v.Instruments {
			if r.Instrument == id && r.Required && (r.Outcome == events.InstrumentPassed || r.Outcome == events.InstrumentFailed) {
				ok = true
			}
		}
		if !ok {
			out = append(out, string(id))
		}
	}
	return out
}

func treatmentReport(treatment string, rows []AttemptRow, trials uint32) TreatmentReport {
	t := TreatmentReport{Treatment: treatment}
	var cases byCase[float64]
	for _, a := range rows {
		if a.Treatment != treatment {
			continue
		}
		t.Planned++
		if len(a.Retried) > 0 {
			t.Retried++
		}
		for _, e := range a.Retried {
			if e.Status == "" {
				continue // never ended: nothing it spent is on record
			}
			if t.RetriedUsage == nil {
				t.RetriedUsage = &RetriedUsage{}
			}
			t.RetriedUsage.add(e)
		}
		if a.Started {
			t.Started++
		}
		if a.Status != "" {
			t.Ended++
			u := &t.Usage
			sumKnown(&u.Tokens, a.Tokens, &u.TokensKnown, &u.TokensUnknown)
			sumKnown(&u.Cost, a.Cost, &u.CostKnown, &u.CostUnknown)
			if a.Millis != nil {
				u.WallMillis += *a.Millis
				u.WallKnown++
			}
			u.CachedCalls += a.CachedCalls
			u.CachedTokens += a.CachedTokens
			if a.Delegation != nil {
				if t.Delegation == nil {
					t.Delegation = &DelegationUsage{}
				}
				t.Delegation.add(a.Delegation)
			}
			for _, su := range a.Summaries {
				if t.Context == nil {
					t.Context = &ContextUsage{}
				}
				t.Context.add(su)
			}
			if a.InputTokens != nil {
				add(&u.InputTokens, *a.InputTokens)
				add(&u.OutputTokens, *a.OutputTokens)
				u.SplitKnown++
			} else {
				u.SplitUnknown++
			}
			sumKnown(&u.CachedInputTokens, a.CachedInputTokens, &u.CachedInputKnown, nil)
			sumKnown(&u.ReasoningTokens, a.ReasoningTokens, &u.ReasoningKnown, nil)
			if a.Turns != nil {
				u.Turns += uint64(*a.Turns)
			}
		}
		for _, j := range a.Judged {
			t.Evaluator.add(j.Usage)
			t.Evaluator.Millis += j.Millis
		}
		if a.Status == events.RunErrored {
			t.HarnessErrors++
		}
		if a.Conflicts > 0 {
			t.Conflicted++
		}
		switch a.Outcome {
		case OutcomePassed, OutcomeFailed:
			t.Graded++
			score := 0.0
			if a.Outcome == OutcomePassed {
				t.Passed++
				score = 1
			} else {
				t.Failed++
			}
			cases.add(a.Case, score)
		case OutcomePending:
			t.Pending++
		case OutcomeInvalid:
			t.Invalid++
		case OutcomeAbstained:
			t.Abstained++
		case OutcomeExcluded:
			t.Excluded++
		case OutcomeAwaiting:
			t.Awaiting++
		case OutcomeDisputed:
			t.Disputed++
		}
	}
	if t.Graded > 0 {
		t.PassRate = ptr(float64(t.Passed) / float64(t.Graded))
		if iv, err := stats.Wilson(t.Passed, t.Graded, stats.Z95); err == nil {
			t.Wilson = &iv
		}
	}
	clusters := cases.clusters()
	if trials > 1 {
		if _, se, err := stats.ClusteredSE(clusters); err == nil {
			t.ClusteredSE = &se
		}
	}
	for k := 1; k <= int(trials); k++ {
		sum, n := 0.0, 0
		for _, cl := range clusters {
			c := 0
			for _, s := range cl {
				if s == 1 {
					c++
				}
			}
			if v, err := stats.PassAtK(len(cl), c, k); err == nil {
				sum += v
				n++
			}
		}
		if n > 0 {
			t.PassAtK = append(t.PassAtK, PassAtK{K: k, Value: sum / float64(n), Cases: n})
		}
	}
	return t
}

// Reported returns the suite.reported body of a complete report, naming
// the stored report by its digest.
func (r Report) Reported(digest events.Digest) events.SuiteReported {
	out := events.SuiteReported{ReportDigest: digest}
	for _, t := range r.Treatments {
		out.Attempts += uint32(t.Planned)
		out.Passed += uint32(t.Passed)
		out.Failed += uint32(t.Failed)
		out.Pending += uint32(t.Pending)
		out.Invalid += uint32(t.Invalid)
		out.Abstained += uint32(t.Abstained)
		out.Excluded += uint32(t.Excluded)
	}
	return out
}
