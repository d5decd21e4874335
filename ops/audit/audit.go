// Package audit checks the committed log against the invariants every
// factline service keeps. It is a pure function of the facts (and,
// optionally, an external sink's own record of effects and the grading
// plans of the runs' cases), so it can run on a live stream, an export or
// a test's log alike, and it trusts nothing the services say about
// themselves: every recorded decision it can re-derive (a cached reply, a
// grade, a suite's report) it derives again with the owner's own pure core
// and compares.
package audit

import (
	"fmt"
	"slices"
	"strings"

	"github.com/factline/factline/events"
	"github.com/factline/factline/services/grader/grade"
)

// Violation is one broken invariant.
type Violation struct {
	// Suite and Run are empty for an effect only the sink's record holds,
	// whose operation names no run the log holds: nothing but the sink
	// knows of it, and a placeholder would read as a run's name.
	Suite, Run string
	Rule       string // short name of the invariant
	Detail     string
}

// String is the violation as the audit prints it: suite/run first, or
// "sink" for what only the sink's record holds.
func (v Violation) String() string {
	if v.Suite == "" && v.Run == "" {
		return fmt.Sprintf("sink: %s: %s", v.Rule, v.Detail)
	}
	return fmt.Sprintf("%s/%s: %s: %s", v.Suite, v.Run, v.Rule, v.Detail)
}

// Rules the audit checks.
const (
	RulePositions    = "positions"          // 1, 2, 3… per run, no gap, no repeat
	RuleOneStall     = "one-stall-per-turn" // every completed turn: exactly one stall.observed
	RuleOneDecision  = "one-decision-per-turn"
	RuleSettled      = "dispatch-settled" // every intended dispatch completed, resolved or surfaced as unknown
	RuleEndedOnce    = "ended-once"       // every started run ended exactly once
	RuleGraded       = "candidate-graded" // every sealed candidate has a verdict
	RuleEffectOnce   = "effect-once"      // the sink saw each settled external effect exactly once
	RuleEffectInLog  = "effect-in-log"    // the sink saw no effect the log does not intend
	RuleNoStrayFacts = "no-facts-after-end"
	// RuleEffectWhileUnknown: no external effect is intended while an
	// earlier one of the run is unsettled or settled with an unknown
	// outcome (its answer was lost): that would be a blind retry.
	RuleEffectWhileUnknown = "effect-while-unknown"
	// RuleEffectTwice: the sink applied two operations of a run, the later
	// intended while the earlier one's outcome was unknown.
	RuleEffectTwice = "effect-twice"
	// RuleEffectRecorded: the sink applied an operation the log settled
	// as not applied: the log claims less than happened.
	RuleEffectRecorded = "effect-recorded"
	// The rules that re-derive recorded decisions are RuleCacheOrigin
	// (cached.go), RuleVerdictDerived and RuleConflictDerived (grades.go)
	// and RuleReportDerived (reports.go); RuleBlobHeld (blobs.go) checks
	// the blobs the facts name.
)

// run gathers what one run's facts say.
type run struct {
	suite, name string
	positions   []uint64
	completed   map[uint32]int
	stalls      map[uint32]int
	decisions   map[uint32]int
	intended    map[string]events.DispatchIntended // by operation
	settled     map[string]bool                    // operation → completed or resolved
	applied     map[string]bool                    // external operations known to have taken effect
	outcome     map[string]string                  // external operations: what their settlement says
	blind       [][2]string                        // external operations intended while an earlier one was unknown
	openEffects []string                           // external operations not yet known applied or not
	claimed     bool
	// lastCompleted is the newest turn completed so far; cancelledAt is
	// the one that was newest when a cancel was accepted (0: none).
	lastCompleted, cancelledAt uint32
	ended                      int
	endReason                  string
	sealed                     bool
	verdicts                   int
	lastKinds                  []events.Kind
	facts                      []events.Fact // the run's facts, in log order
}

// Options say what else the audit knows.
type Options struct {
	// Sink, when not nil, is an external sink's own count of effects by
	// operation ID (its Idempotency-Key).
	Sink map[string]int
	// Finished says every run should be over (e.g. the suite was reported):
	// a started run that never ended is then a violation, not work in
	// progress.
	Finished bool
	// Origins are facts of runs outside those audited (another suite's),
	// read only as the calls that cached replies cite. The audited facts
	// are read first.
	Origins []events.Fact
	// Grading, when not nil, returns the grading plan the case of a run
	// declares (its instruments, whether each is required and binds, the
	// requirement it vetoes, whether an advisory one may be missing), and
	// false when the case is not known. A verdict is then re-derived under
	// the case's word for every instrument and version it declares; without
	// it, under what the run's own facts record.
	Grading func(suite, run string) (grade.Policy, bool)
	// Blobs, when not nil, says whether the store holds the blob of a
	// digest: each blob a fact names (events.BlobRefs) that it does not
	// hold is then a RuleBlobHeld violation. Nil: blobs are not checked
	// (a copy of facts only holds none).
	Blobs func(events.Digest) bool
	// MissingBase, when not nil, says for a blob Blobs says is held
	// whether it can be read: a blob stored as a delta is rebuilt on its
	// base, and that on its own, down to a whole blob. It returns the
	// first base on that chain the store does not hold, "" when none is
	// missing. A blob held whose base is missing is a RuleBlobHeld
	// violation naming the base.
	MissingBase func(events.Digest) events.Digest
	// BlobsWhere names what Blobs answers for, in a RuleBlobHeld
	// violation ("which the export does not hold"); empty: "the store".
	BlobsWhere string
	// ReportBlob, when not nil, returns the bytes of the report blob a
	// suite.reported names (false: not held, or not readable; blob-held
	// says which). Each report it names is then held to the log
	// (RuleReportDerived): the blob, not only the counts the fact
	// carries. Nil: only the counts are checked.
	ReportBlob func(events.Digest) ([]byte, bool)
	// Seqs, when as long as the facts, is each fact's sequence in the
	// stream, for violations that name a fact; otherwise a fact is named
	// by its run and position.
	Seqs []uint64
}

// Check audits facts (in log order).
func Check(facts []events.Fact, opts Options) []Violation {
	sink := opts.Sink
	runs := map[string]*run{}
	var order []string
	suites := map[string][]events.Fact{}
	var suiteOrder []string
	// Each suite's facts' stream sequences, when the facts' are known.
	suiteSeqs := map[string][]uint64{}
	withSeqs := len(opts.Seqs) == len(facts)
	for i, f := range facts {
		if _, ok := suites[f.Suite]; !ok {
			suiteOrder = append(suiteOrder, f.Suite)
		}
		suites[f.Suite] = append(suites[f.Suite], f)
		if withSeqs {
			suiteSeqs[f.Suite] = append(suiteSeqs[f.Suite], opts.Seqs[i])
		}
		if f.Run == events.SuiteScope {
			continue
		}
		key := f.Suite + "/" + f.Run
		r := runs[key]
		if r == nil {
			r = &run{suite: f.Suite, name: f.Run, completed: map[uint32]int{}, stalls: map[uint32]int{}, decisions: map[uint32]int{},
				intended: map[string]events.DispatchIntended{}, settled: map[string]bool{}, applied: map[string]bool{}, outcome: map[string]string{}}
			runs[key] = r
			order = append(order, key)
		}
		r.positions = append(r.positions, f.Position)
		r.facts = append(r.facts, f)
		if r.ended > 0 {
			r.lastKinds = append(r.lastKinds, f.Kind())
		}
		r.observe(f)
	}
	var out []Violation
	intendedOps := map[string]bool{}
	origins := originsOf(runs, opts.Origins)
	// Where each audited fact stands in the log, for what must come
	// before what: a cached reply's origin before it (made only when the
	// log holds one).
	var at map[[16]byte]int
	for _, f := range facts {
		if r, ok := f.Body.(events.ModelReplied); ok && r.Cached != nil {
			at = make(map[[16]byte]int, len(facts))
			break
		}
	}
	if at != nil {
		for i, f := range facts {
			at[f.ID] = i
		}
	}
	for _, key := range order {
		r := runs[key]
		out = append(out, r.check(opts.Finished)...)
		out = append(out, checkCached(r, origins, at)...)
		var declared *grade.Policy
		if opts.Grading != nil {
			if p, ok := opts.Grading(r.suite, r.name); ok {
				declared = &p
			}
		}
		out = append(out, checkGrades(r, declared)...)
		for op, in := range r.intended {
			intendedOps[op] = true
			if sink == nil || in.Effect != events.EffectExternal {
				continue
			}
			switch {
			case r.applied[op] && sink[op] != 1:
				out = append(out, Violation{r.suite, r.name, RuleEffectOnce, fmt.Sprintf("operation %s took effect %d times at the sink, want 1", op, sink[op])})
			case sink[op] > 1:
				out = append(out, Violation{r.suite, r.name, RuleEffectOnce, fmt.Sprintf("operation %s took effect %d times at the sink, want at most 1", op, sink[op])})
			case r.outcome[op] == events.OutcomeNotApplied && sink[op] > 0:
				out = append(out, Violation{r.suite, r.name, RuleEffectRecorded, fmt.Sprintf("operation %s took effect at the sink, and the log settled it as not applied", op)})
			}
		}
		for _, pair := range r.blind {
			if sink != nil && sink[pair[0]] > 0 && sink[pair[1]] > 0 {
				out = append(out, Violation{r.suite, r.name, RuleEffectTwice, fmt.Sprintf("operations %s and %s both took effect at the sink; %s was intended while %s had an unknown outcome", pair[0], pair[1], pair[1], pair[0])})
			}
		}
	}
	for _, suite := range suiteOrder {
		out = append(out, checkReports(suite, suites[suite], suiteSeqs[suite], opts.ReportBlob)...)
	}
	out = append(out, checkBlobs(facts, opts.Seqs, opts.Blobs, opts.MissingBase, opts.BlobsWhere)...)
	if sink != nil {
		ops := make([]string, 0, len(sink))
		for op := range sink {
			ops = append(ops, op)
		}
		slices.Sort(ops)
		// An operation ID begins with its run's ID; the run is named only
		// when the log holds exactly one run of that name, since one ID two
		// suites share says nothing of which suite's effect it was.
		suitesOf := map[string][]string{}
		for _, key := range order {
			suitesOf[runs[key].name] = append(suitesOf[runs[key].name], runs[key].suite)
		}
		for _, op := range ops {
			if !intendedOps[op] {
				var suite, runName string
				if name, _, ok := strings.Cut(op, "/"); ok && len(suitesOf[name]) == 1 {
					suite, runName = suitesOf[name][0], name
				}
				out = append(out, Violation{suite, runName, RuleEffectInLog, fmt.Sprintf("the sink holds %d effect(s) of operation %s, which the log never intended", sink[op], op)})
			}
		}
	}
	return out
}

// originsOf finds a run's facts among the audited runs, else among
// extra, facts given only as origins.
func originsOf(runs map[string]*run, extra []events.Fact) runFacts {
	more := map[string][]events.Fact{}
	for _, f := range extra {
		key := f.Suite + "/" + f.Run
		more[key] = append(more[key], f)
	}
	return func(suite, name string) []events.Fact {
		if r := runs[suite+"/"+name]; r != nil {
			return r.facts
		}
		return more[suite+"/"+name]
	}
}

func (r *run) observe(f events.Fact) {
	switch b := f.Body.(type) {
	case events.RunClaimed:
		r.claimed = true
	case events.TurnCompleted:
		r.completed[b.Evidence.Turn]++
		r.lastCompleted = max(r.lastCompleted, b.Evidence.Turn)
	case events.StallObserved:
		r.stalls[b.Turn]++
	case events.StopDecided:
		r.decisions[b.Decision.Turn]++
	case events.DispatchIntended:
		if _, again := r.intended[b.OperationID]; b.Effect.IsEffect() && !again {
			for _, op := range r.openEffects {
				r.blind = append(r.blind, [2]string{op, b.OperationID})
			}
			r.openEffects = append(r.openEffects, b.OperationID)
		}
		r.intended[b.OperationID] = b
	case events.DispatchCompleted:
		for op, in := range r.intended {
			if in.Turn == b.Turn && in.CallID == b.Dispatch.CallID {
				r.settled[op] = true
				if !in.Effect.IsEffect() {
					if b.Dispatch.Disposition == events.DispositionExecuted && b.Error == nil {
						r.applied[op] = true
					}
					continue
				}
				r.know(op, effectOutcome(b))
			}
		}
	case events.ControlAccepted:
		if b.Control.Signal == events.SignalCancel && r.cancelledAt == 0 {
			r.cancelledAt = r.lastCompleted
		}
		if b.Control.Signal == events.SignalResolve {
			r.settled[b.Operation] = true
			r.know(b.Operation, b.Outcome)
		}
	case events.RunEnded:
		r.ended++
		r.endReason = b.Reason
	case events.CandidateSealed:
		r.sealed = true
	case events.GradeVerdict:
		r.verdicts++
	}
}

// know records what the log says of an external operation's outcome.
func (r *run) know(op, outcome string) {
	r.outcome[op] = outcome
	r.applied[op] = outcome == events.OutcomeApplied
	if outcome == events.OutcomeUnknown {
		return
	}
	r.openEffects = slices.DeleteFunc(r.openEffects, func(o string) bool { return o == op })
}

// effectOutcome is what the settlement of an external call says it did.
// Facts written before the outcome was recorded say it through their
// disposition and error: an answer that never came (an I/O error, a
// timeout, a cancel) leaves it unknown.
func effectOutcome(b events.DispatchCompleted) string {
	if b.Dispatch.Outcome != "" {
		return b.Dispatch.Outcome
	}
	switch {
	case b.Dispatch.Disposition == events.DispositionRejected || b.Dispatch.Disposition == events.DispositionNotRun:
		return events.OutcomeNotApplied
	case b.Dispatch.Disposition != events.DispositionExecuted:
		return events.OutcomeUnknown
	case b.Error == nil:
		return events.OutcomeApplied
	}
	switch b.Error.Code {
	case "HTTP_STATUS", "URL_NOT_ALLOWED", "BAD_ARGUMENTS", "TOOL_ERROR", "APPROVAL_REJECTED":
		return events.OutcomeNotApplied // the sink (or the harness) refused it
	}
	return events.OutcomeUnknown
}

func (r *run) check(finished bool) []Violation {
	var out []Violation
	add := func(rule, format string, args ...any) {
		out = append(out, Violation{r.suite, r.name, rule, fmt.Sprintf(format, args...)})
	}
	for i, p := range r.positions {
		if p != uint64(i+1) {
			add(RulePositions, "fact %d of the run has position %d", i+1, p)
			break
		}
	}
	turns := make([]uint32, 0, len(r.completed))
	for t := range r.completed {
		turns = append(turns, t)
	}
	slices.Sort(turns)
	for _, t := range turns {
		if n := r.completed[t]; n != 1 {
			add(RuleOneStall, "turn %d completed %d times", t, n)
		}
		// A cancel is accepted at any instant (docs/controls.md), also
		// between a turn's completion and its observation: that turn, the
		// run's last, may then go without its stall.observed and
		// stop.decided, since the stall handler and the decider append
		// nothing to an ended run. Never more than one.
		want := "1"
		mayLack := r.cancelledAt > 0 && t == r.cancelledAt
		if mayLack {
			want = "at most 1"
		}
		if n := r.stalls[t]; n > 1 || (n == 0 && !mayLack) {
			add(RuleOneStall, "turn %d has %d stall.observed, want %s", t, n, want)
		}
		if n := r.decisions[t]; n > 1 || (n == 0 && !mayLack) {
			add(RuleOneDecision, "turn %d has %d stop.decided, want %s", t, n, want)
		}
	}
	ops := make([]string, 0, len(r.intended))
	for op := range r.intended {
		ops = append(ops, op)
	}
	slices.Sort(ops)
	for _, op := range ops {
		if r.settled[op] {
			continue
		}
		// An unsettled intent is allowed only when the run ended naming it
		// as an unknown outcome for a person, or is still running.
		if r.ended > 0 && !strings.Contains(r.endReason, op) {
			add(RuleSettled, "operation %s was intended and never settled, and the run's end does not surface it", op)
		}
	}
	for _, pair := range r.blind {
		add(RuleEffectWhileUnknown, "operation %s was intended while operation %s was unsettled or had an unknown outcome", pair[1], pair[0])
	}
	switch {
	case r.claimed && r.ended > 1:
		add(RuleEndedOnce, "the run ended %d times", r.ended)
	case r.claimed && r.ended == 0 && finished:
		add(RuleEndedOnce, "the run started and never ended")
	}
	for _, k := range r.lastKinds {
		// Graders grade an ended run; nobody else appends to it.
		if k.Owner() != events.OwnerGrader && k != events.KindRunEnded {
			add(RuleNoStrayFacts, "%s after run.ended", k)
		}
	}
	if r.sealed && r.ended == 1 && r.verdicts == 0 {
		add(RuleGraded, "the sealed candidate has no verdict (not even pending)")
	}
	return out
}
