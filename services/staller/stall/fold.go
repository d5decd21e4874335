package stall

import (
	"slices"
	"strconv"
	"strings"

	"github.com/factline/factline/events"
)

// maxRefs bounds the evidence refs a streak keeps (the most recent ones).
const maxRefs = 8

// State is the stall fold's state for one run. Build it with New, feed it
// the run's facts in log order with Fold, and read a completed turn with
// Observe. Fold reuses the state's storage: treat the state passed in as
// consumed and keep the one returned.
type State struct {
	policy Policy

	generation uint32
	epoch      uint64        // current source epoch: 1 for the fixture
	digest     events.Digest // workspace digest after the last dispatch that named one
	wrote      bool          // an applied mutation happened in the run

	checks map[string]*checkState
	calls  map[callKey]*callInfo // what the turn's earlier facts said about each call

	// The verification episode and its repair budget.
	episode   uint32
	repairs   uint32               // retries charged in this episode
	delivered uint32               // retries of this episode whose feedback reached a later turn
	credit    uint32               // applied edits in this episode
	clean     bool                 // the last verification left no failure; the next applied edit opens an episode
	failing   int                  // failing verification turns since the last clean pass
	failRefs  []events.EvidenceRef // the failing dispatches of those turns (the latest few)
	retry     *pendingRetry
	plateau   plateau

	// Repeat detection over turns with tool calls; tool-free turns are
	// transparent to it and count only as idle.
	lastSig, prevSig     string // full signature (calls, observations, errors) of the last two tool turns
	lastActs, lastObs    string
	lastErrs             string
	obs, errs, alt, idle streak

	// opportunity: the retry turn whose feedback the turn in progress is
	// the first to carry (set when that turn starts).
	opportunityTurn, opportunityFor uint32

	turns map[uint32]reading

	// agentTurns are the turns started under events.ContextPolicyAgent:
	// an external agent's, whose tools are its own and leave no dispatches
	// to read. They arm nothing and leave every streak as it was.
	agentTurns map[uint32]bool

	// answers holds each action's latest observation: a read or a command
	// whose answer changed brought new information (polling a job is work),
	// one that answers the same again did not.
	answers map[string]string
}

type checkState struct {
	executed  bool // an executed result is known
	passed    bool // the latest executed result passed
	epoch     uint64
	gen       uint32
	open      bool   // failed and not cleared by a pass at the current epoch
	failID    string // workspace identity of the latest failure
	failRun   int    // consecutive failures on failID
	failRefs  []events.EvidenceRef
	minErrors int // smallest complete diagnostic set of this failure run; -1 none
	diags     []events.Diagnostic
}

type callKey struct {
	turn uint32
	id   events.CallID
}

type callInfo struct {
	tool    string
	args    events.Digest
	obs     string // digest of the observation; "" unknown
	errCode string
}

// plateau is the repeated-observation retries charged while the same
// calls kept answering the same: when one of those calls then answers
// something new, the job it watches moved on, and the retries are given
// back. A job that progresses slowly is not stopped at its third plateau.
type plateau struct {
	acts    map[string]bool // the plateau's actions
	charged uint32
}

type pendingRetry struct {
	turn      uint32
	pos       uint64
	delivered bool
}

type streak struct {
	n    int
	refs []events.EvidenceRef
}

func (s *streak) reset() { *s = streak{} }

// follow takes a turn into the streak: one that shows nothing of its kind
// ends it, one that repeats the turn before goes on with it, any other
// starts it again.
func (s *streak) follow(shows, repeats bool, refs []events.EvidenceRef) {
	switch {
	case !shows:
		s.reset()
	case repeats:
		s.add(refs)
	default:
		s.restart(refs)
	}
}

func (s *streak) add(refs []events.EvidenceRef) {
	s.n++
	s.refs = appendRefs(s.refs, refs)
}

func (s *streak) restart(refs []events.EvidenceRef) {
	s.n = 1
	s.refs = appendRefs(nil, refs)
}

func appendRefs(dst, refs []events.EvidenceRef) []events.EvidenceRef {
	dst = append(dst, refs...)
	if len(dst) > maxRefs {
		dst = slices.Clone(dst[len(dst)-maxRefs:])
	}
	return dst
}

// reading is what the fold saw when a turn completed: everything Observe
// needs, fixed at that point so that folding later facts cannot change it.
type reading struct {
	position    uint64
	checkpoint  events.StallCheckpoint
	armed       []string
	findings    map[string]finding
	undelivered bool // a retry of this episode has not reached the model yet
	unmet       []events.RequirementID
}

// finding is what one armed pattern saw, for the action's evidence and
// feedback.
type finding struct {
	count int    // the streak or count that reached the threshold
	check string // repeated_failure: the check
	calls string // repeats: the tools called, in order
	errs  string // repeated_error: the error codes
	diags string // repeated_failure: the first diagnostics
	refs  []events.EvidenceRef
}

// New returns the empty fold for a run under policy p.
func New(p Policy) State {
	return State{
		policy:  p,
		epoch:   1,
		checks:  map[string]*checkState{},
		calls:   map[callKey]*callInfo{},
		turns:   map[uint32]reading{},
		answers: map[string]string{},
	}
}

// Generation returns the run's current task generation as folded so far.
func (s State) Generation() uint32 { return s.generation }

// Epoch returns the current source epoch as folded so far (1 for the
// fixture, one more after every applied mutation).
func (s State) Epoch() uint64 { return s.epoch }

// HasTurn reports whether the fold has seen turn n complete.
func (s State) HasTurn(n uint32) bool { _, ok := s.turns[n]; return ok }

// Fold folds one fact of the run into the state. Facts must come in log
// order. Kinds the stall handler does not read leave the state unchanged.
func Fold(s State, f events.Fact) State {
	if s.checks == nil {
		s = New(s.policy)
	}
	if f.TaskGeneration > s.generation {
		s.newGeneration(f.TaskGeneration)
	}
	switch b := f.Body.(type) {
	case events.TaskGenerationStarted:
		if b.Generation > s.generation {
			s.newGeneration(b.Generation)
		}
	case events.TurnStarted:
		s.turnStarted(f.Position, b.Turn)
		if b.Policy == events.ContextPolicyAgent {
			if s.agentTurns == nil {
				s.agentTurns = map[uint32]bool{}
			}
			s.agentTurns[b.Turn] = true
		}
	case events.ModelReplied:
		for _, c := range b.Calls {
			in := s.call(b.Turn, c.ID)
			in.tool, in.args = c.Name, c.ArgsDigest
		}
	case events.DispatchIntended:
		in := s.call(b.Turn, b.CallID)
		if in.tool == "" {
			in.tool = b.Tool
		}
		if in.args == "" {
			in.args = b.ArgsDigest
		}
	case events.DispatchCompleted:
		in := s.call(b.Turn, b.Dispatch.CallID)
		in.obs = observationOf(b)
		if b.Error != nil {
			in.errCode = b.Error.Code
		}
	case events.TurnCompleted:
		s.completeTurn(f.Position, b.Evidence)
	case events.StallObserved:
		s.observed(f.Position, b)
	}
	return s
}

func (s *State) call(turn uint32, id events.CallID) *callInfo {
	k := callKey{turn, id}
	in := s.calls[k]
	if in == nil {
		in = &callInfo{}
		s.calls[k] = in
	}
	return in
}

// observationOf identifies what a dispatch returned: its output and its
// error, message included, with volatile tokens (clocks, durations, PIDs,
// temporary paths, generated IDs) replaced, so that an answer differing
// only in them is the same answer. An output known only by its digest is
// compared byte for byte.
func observationOf(b events.DispatchCompleted) string {
	out := b.OutputDigest
	if out == "" {
		out = events.DigestOf([]byte(stable(b.Output)))
	}
	if b.Error == nil {
		return string(out)
	}
	return string(events.DigestOf([]byte(string(out) + "\x00" + b.Error.Code + "\x00" + stable(b.Error.Message))))
}

// newGeneration starts a new task generation: a new task gets a new episode
// with a fresh repair budget and fresh repeat detection. Check results stay:
// the workspace did not change.
func (s *State) newGeneration(g uint32) {
	s.generation = g
	s.startEpisode()
	s.lastSig, s.prevSig, s.lastActs, s.lastObs, s.lastErrs = "", "", "", "", ""
	s.obs.reset()
	s.errs.reset()
	s.alt.reset()
	s.idle.reset()
}

// startEpisode opens a verification episode with a fresh repair budget.
func (s *State) startEpisode() {
	s.episode++
	s.repairs, s.delivered, s.credit, s.failing, s.failRefs = 0, 0, 0, 0, nil
	s.clean = false
	s.retry = nil
	s.plateau = plateau{}
}

// turnStarted records delivery: a turn that starts after a retry was
// committed is built with its feedback, and is the model's opportunity to
// act on it.
func (s *State) turnStarted(pos uint64, turn uint32) {
	if r := s.retry; r != nil && !r.delivered && pos > r.pos {
		r.delivered = true
		s.delivered++
		s.opportunityTurn, s.opportunityFor = turn, r.turn
	}
}

// observed folds a committed observation: a retry is charged to the
// episode's budget whatever this fold would decide today, so a replay sees
// what actually happened.
func (s *State) observed(pos uint64, b events.StallObserved) {
	if b.Observation.Action == nil {
		return
	}
	if r, ok := b.Observation.Action.Variant().(events.StallRetry); ok {
		s.repairs++
		s.retry = &pendingRetry{turn: b.Turn, pos: pos}
		if r.Cause == PatternRepeatedObservation {
			s.chargePlateau()
		}
	}
}

// chargePlateau counts a repeated-observation retry against the plateau
// of the calls that repeated (the last tool turn's); a retry on other
// calls starts another plateau.
func (s *State) chargePlateau() {
	acts := map[string]bool{}
	for _, line := range strings.Split(strings.TrimSuffix(s.lastActs, "\n"), "\n") {
		if line != "" {
			acts[line] = true
		}
	}
	if len(acts) == 0 {
		return
	}
	same := len(acts) == len(s.plateau.acts)
	for a := range acts {
		same = same && s.plateau.acts[a]
	}
	if !same {
		s.plateau = plateau{acts: acts}
	}
	s.plateau.charged++
}

// plateauMoved gives back the retries a plateau took: one of its calls
// answered something new.
func (s *State) plateauMoved() {
	s.repairs -= min(s.plateau.charged, s.repairs)
	s.plateau = plateau{}
}

// step is one call of a turn as repeat detection sees it.
type step struct {
	action string // tool and argument digest; "" when the arguments are unknown
	obs    string
	err    string
}

func (s *State) completeTurn(pos uint64, ev events.RunEvidence) {
	n := ev.Turn
	if s.agentTurns[n] {
		// An external agent's turn: nothing it did is a dispatch, so
		// nothing here is idleness, a repeat or a failure.
		delete(s.agentTurns, n)
		for k := range s.calls {
			if k.turn == n {
				delete(s.calls, k)
			}
		}
		s.turns[n] = reading{position: pos, checkpoint: events.StallCheckpoint{Episode: s.episode, RepairsUsed: s.repairs,
			WriteCredit: s.credit, OpenFailure: s.anyOpen(), FeedbackDelivered: s.delivered}, unmet: s.unmet()}
		return
	}
	found := map[string]finding{}
	var steps []step
	var refs []events.EvidenceRef
	effective, failedTurn, progress := false, false, false
	var failedRefs []events.EvidenceRef

	for _, d := range ev.Dispatches {
		in := s.calls[callKey{n, d.CallID}]
		if in == nil {
			in = &callInfo{}
		}
		tool := d.Tool
		if tool == "" {
			tool = in.tool
		}
		if d.Mutation == events.MutationApplied {
			s.applied()
		}
		if d.Digest != "" {
			s.digest = d.Digest
		}
		if d.Check != "" {
			switch v := d.Verification.Variant().(type) {
			case events.VerifyPassed:
				s.pass(d.Check, v.SourceEpoch)
			case events.VerifyFailed:
				failedTurn = true
				failedRefs = append(failedRefs, d.EvidenceRef)
				c, shrank := s.fail(d, v)
				progress = progress || shrank
				if t := s.policy.RepeatedFailure; t > 0 && c.failRun >= t {
					found[PatternRepeatedFailure] = finding{count: c.failRun, check: d.Check, diags: diagSummary(c.diags), refs: slices.Clone(c.failRefs)}
				}
			}
		}
		if tool == taskCompleteTool {
			continue
		}
		act := ""
		if in.args != "" && tool != "" {
			act = tool + " " + string(in.args)
		}
		if s.newInformation(d, tool, act, in) {
			effective = true
			if s.plateau.acts[act] {
				s.plateauMoved()
			}
		} else if isEffective(d, in) {
			effective = true
		}
		steps = append(steps, step{action: act, obs: in.obs, err: errorOf(d, in)})
		refs = append(refs, d.EvidenceRef)
	}
	for k := range s.calls {
		if k.turn == n {
			delete(s.calls, k)
		}
	}

	if failedTurn && s.anyOpen() && !progress {
		s.failing++
		s.failRefs = appendRefs(s.failRefs, failedRefs)
		if t := s.policy.FailingVerifications; t > 0 && s.failing >= t {
			found[PatternFailingVerifications] = finding{count: s.failing, refs: slices.Clone(s.failRefs)}
		}
	}

	if effective {
		s.idle.reset()
	} else {
		s.idle.add(refs)
		if t := s.policy.IdleTurns; t > 0 && s.idle.n >= t {
			found[PatternIdleTurns] = finding{count: s.idle.n, refs: slices.Clone(s.idle.refs)}
		}
	}

	sig := ""
	if len(steps) > 0 {
		sig = s.repeats(steps, refs, found)
	}

	r := reading{
		position: pos,
		checkpoint: events.StallCheckpoint{
			Episode:           s.episode,
			RepairsUsed:       s.repairs,
			WriteCredit:       s.credit,
			OpenFailure:       s.anyOpen(),
			Signature:         sig,
			FeedbackDelivered: s.delivered,
		},
		findings:    found,
		undelivered: s.retry != nil && !s.retry.delivered,
		unmet:       s.unmet(),
	}
	if s.opportunityTurn == n {
		r.checkpoint.Opportunity = s.opportunityFor
	}
	for _, p := range patternOrder {
		if _, ok := found[p]; ok {
			r.armed = append(r.armed, p)
		}
	}
	r.checkpoint.Armed = slices.Clone(r.armed)
	s.turns[n] = r
}

// repeats updates repeat detection with a tool turn and returns the turn's
// signature digest.
func (s *State) repeats(steps []step, refs []events.EvidenceRef, found map[string]finding) string {
	var acts, obs, errs, full strings.Builder
	known, allErr, obsKnown := true, true, true
	for _, st := range steps {
		if st.action == "" {
			known = false
		}
		if st.err == "" {
			allErr = false
		}
		if st.obs == "" {
			obsKnown = false
		}
		acts.WriteString(st.action + "\n")
		obs.WriteString(st.obs + "\n")
		errs.WriteString(st.err + "\n")
		full.WriteString(st.action + "\x00" + st.obs + "\x00" + st.err + "\n")
	}
	a, o, e := acts.String(), obs.String(), errs.String()
	sig := string(events.DigestOf([]byte(full.String())))
	if !known {
		// Unknown arguments cannot be compared: the turn is new.
		s.obs.reset()
		s.errs.reset()
		s.alt.reset()
		s.lastSig, s.prevSig, s.lastActs, s.lastObs, s.lastErrs = "", "", "", "", ""
		return sig
	}
	sameActs := a == s.lastActs

	// A streak counts its turns, the first included, but only a turn that
	// repeats the one before it can arm: at threshold 1 the first tool
	// turn of a run equals nothing.
	s.obs.follow(obsKnown, sameActs && o == s.lastObs, refs)
	if t := s.policy.RepeatedObservation; t > 0 && s.obs.n >= max(t, 2) {
		found[PatternRepeatedObservation] = finding{count: s.obs.n, calls: summarise(steps), refs: slices.Clone(s.obs.refs)}
	}

	s.errs.follow(allErr, sameActs && e == s.lastErrs, refs)
	if t := s.policy.RepeatedError; t > 0 && s.errs.n >= max(t, 2) {
		found[PatternRepeatedError] = finding{count: s.errs.n, calls: summarise(steps),
			errs: strings.Join(strings.Fields(e), ", "), refs: slices.Clone(s.errs.refs)}
	}

	if obsKnown && sig == s.prevSig && sig != s.lastSig {
		if s.alt.n == 0 {
			s.alt.n = 2 // the two turns before this one were the first cycle's start
		}
		s.alt.add(refs)
	} else {
		s.alt.reset()
	}
	if t := s.policy.Alternation; t > 0 && s.alt.n/2 >= t {
		found[PatternAlternation] = finding{count: s.alt.n / 2, calls: summarise(steps), refs: slices.Clone(s.alt.refs)}
	}

	s.prevSig, s.lastSig = s.lastSig, sig
	s.lastActs, s.lastObs, s.lastErrs = a, o, e
	return sig
}

// summarise names a turn's calls for feedback: the tools, in order.
func summarise(steps []step) string {
	names := make([]string, len(steps))
	for i, st := range steps {
		names[i], _, _ = strings.Cut(st.action, " ")
	}
	return strings.Join(names, ", ")
}

// newInformation says whether an executed read or command answered
// something it had not answered before. Edits that changed nothing never
// count: an unchanged write is no work, whatever it printed.
func (s *State) newInformation(d events.CompletedDispatch, tool, act string, in *callInfo) bool {
	if d.Disposition != events.DispositionExecuted || in.obs == "" || act == "" {
		return false
	}
	if tool == "write_file" || tool == "edit_file" {
		return false
	}
	prev, seen := s.answers[act]
	s.answers[act] = in.obs
	return !seen || prev != in.obs
}

// isEffective says whether a call did any work: it executed without error
// and did not leave an attempted change unmade. A declared check that ran
// counts whatever its result.
func isEffective(d events.CompletedDispatch, in *callInfo) bool {
	if d.Disposition != events.DispositionExecuted {
		return false
	}
	if d.Check != "" {
		switch d.Verification.Variant().(type) {
		case events.VerifyPassed, events.VerifyFailed:
			return true
		}
		return false
	}
	if in.errCode != "" {
		return false
	}
	return d.Mutation != events.MutationUnchanged && d.Mutation != events.MutationNotApplied
}

// errorOf is a call's error identity: its code, never its text. A call
// that was not executed ends in its disposition.
func errorOf(d events.CompletedDispatch, in *callInfo) string {
	if in.errCode != "" {
		return in.errCode
	}
	if d.Disposition == events.DispositionRejected || d.Disposition == events.DispositionCanceled {
		return string(d.Disposition)
	}
	return ""
}

// applied folds an applied mutation: the workspace moves to a new epoch and
// the episode earns write credit. After a clean check, it opens a new
// verification episode.
func (s *State) applied() {
	if s.clean {
		s.startEpisode()
	}
	s.epoch++
	s.credit++
	s.wrote = true
}

func (s *State) check(id string) *checkState {
	c := s.checks[id]
	if c == nil {
		c = &checkState{minErrors: -1}
		s.checks[id] = c
	}
	return c
}

// pass folds an executed pass. Only a pass at the current source epoch
// clears the check's failure; a stale one proves nothing about this
// workspace.
func (s *State) pass(id string, epoch uint64) {
	if epoch > s.epoch {
		s.epoch = epoch
	}
	c := s.check(id)
	c.executed, c.passed, c.epoch, c.gen = true, true, epoch, s.generation
	if epoch < s.epoch {
		return
	}
	c.open, c.failID, c.failRun, c.failRefs, c.minErrors, c.diags = false, "", 0, nil, -1, nil
	if !s.anyOpen() {
		s.clean = true
		s.failing, s.failRefs = 0, nil
	}
}

// fail folds an executed failure and reports whether it proves progress: a
// complete diagnostic set smaller than any seen in this failure run.
func (s *State) fail(d events.CompletedDispatch, v events.VerifyFailed) (*checkState, bool) {
	if v.SourceEpoch > s.epoch {
		s.epoch = v.SourceEpoch
	}
	c := s.check(d.Check)
	c.executed, c.passed, c.epoch, c.gen, c.open = true, false, v.SourceEpoch, s.generation, true
	c.diags = v.Diagnostics
	s.clean = false
	id := "epoch:" + strconv.FormatUint(max(v.SourceEpoch, 1), 10)
	if d.Digest != "" {
		id = string(d.Digest)
	}
	if id == c.failID {
		c.failRun++
	} else {
		c.failID, c.failRun, c.failRefs = id, 1, nil
	}
	c.failRefs = appendRefs(c.failRefs, []events.EvidenceRef{d.EvidenceRef})
	shrank := false
	if v.Complete {
		n := len(v.Diagnostics)
		shrank = c.minErrors >= 0 && n < c.minErrors
		if c.minErrors < 0 || n < c.minErrors {
			c.minErrors = n
		}
	}
	return c, shrank
}

func (s *State) anyOpen() bool {
	for _, c := range s.checks {
		if c.open {
			return true
		}
	}
	return false
}

// unmet lists the requirements the run has not shown met: a check
// requirement needs an executed pass of its check at the current epoch in
// the current task generation; the write requirement an applied change that
// still stands; any other requirement is never met from here.
func (s *State) unmet() []events.RequirementID {
	var out []events.RequirementID
	for _, r := range s.policy.Requirements {
		met := false
		switch {
		case r.Check != "":
			c := s.checks[r.Check]
			met = c != nil && c.executed && c.passed && !c.open && c.epoch >= s.epoch && c.gen == s.generation
		case r.Write:
			met = s.wrote && (s.policy.FixtureDigest == "" || s.digest == "" || s.digest != s.policy.FixtureDigest)
		}
		if !met {
			out = append(out, r.ID)
		}
	}
	return out
}

// diagSummary renders the first diagnostics of a failure for feedback.
func diagSummary(diags []events.Diagnostic) string {
	var b strings.Builder
	for i, d := range diags {
		if i == 3 {
			break
		}
		if i > 0 {
			b.WriteString("; ")
		}
		if d.File != "" {
			b.WriteString(d.File)
			if d.Line > 0 {
				b.WriteString(":" + strconv.FormatUint(uint64(d.Line), 10))
			}
			b.WriteString(": ")
		}
		b.WriteString(d.Message)
	}
	return b.String()
}
