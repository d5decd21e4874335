package pages

import (
	"slices"
	"strings"
	"time"

	"github.com/factline/factline/events"
	"github.com/factline/factline/projections"
	"github.com/factline/factline/services/meter/measure"
)

// RunPage is one run's transcript: turn by turn what the model received
// and answered, what each call did, what the stall handler observed and the
// stop decider decided, the controls accepted, and how the run ended and
// was graded.
type RunPage struct {
	Suite   string `json:"suite"`
	Run     string `json:"run"`
	Through uint64 `json:"through"`
	// Handoff is the runs projection's summary: the handoff packet.
	Handoff   projections.RunSummary `json:"handoff"`
	Requested *Requested             `json:"requested,omitempty"`
	// Parent is set on a child run: the run and the delegate call that
	// started it (docs/tools.md#delegate).
	Parent *events.ParentRef `json:"parent,omitempty"`
	// Children are the child runs this run's delegate calls started.
	Children []Child `json:"children,omitempty"`
	Claims   []Claim `json:"claims,omitempty"`
	// Preamble holds controls accepted before the first turn started.
	Preamble []Control `json:"preamble,omitempty"`
	Turns    []Turn    `json:"turns"`
	// Waiting lists operations intended and not settled while the run has
	// not ended: a call running, or one waiting for a person's approval.
	Waiting []Waiting `json:"waiting,omitempty"`
	End     *End      `json:"end,omitempty"`
	Sealed  *Sealed   `json:"sealed,omitempty"`
	Grade   *Grade    `json:"grade,omitempty"`
	// Counted is the report's row of this attempt (nil when no submitted
	// suite plans it): where the meter counts it, and why.
	Counted *measure.AttemptRow `json:"counted,omitempty"`
	// Log is every fact of the run, one line each.
	Log []FactLine `json:"log"`
}

// Requested is the run's run.requested: what was asked and within which
// budget.
type Requested struct {
	Case            string        `json:"case"`
	CaseDigest      events.Digest `json:"case_digest"`
	Treatment       string        `json:"treatment"`
	TreatmentDigest events.Digest `json:"treatment_digest"`
	Trial           uint32        `json:"trial"`
	Budget          Budget        `json:"budget"`
	Identity        events.Digest `json:"identity,omitempty"`
}

// Child is a child run a delegate call started, and how far it got.
type Child struct {
	Run    string        `json:"run"`
	Turn   uint32        `json:"turn"`
	CallID events.CallID `json:"call_id"`
	// Status is its run.ended status ("" while it runs).
	Status string `json:"status,omitempty"`
}

// Budget is a run's limits (0: none).
type Budget struct {
	Steps   uint32 `json:"steps"`
	Tokens  uint64 `json:"tokens"`
	Seconds uint32 `json:"seconds"`
	Cost    uint64 `json:"cost"`
}

// Claim is one runner taking the run.
type Claim struct {
	At         time.Time `json:"at"`
	Runner     string    `json:"runner"`
	Lease      uint32    `json:"lease"`
	ResumeFrom uint64    `json:"resume_from,omitempty"`
}

// Turn is one turn of the transcript. Its base (request digest, reply,
// calls and observations, feedback, steers) is the history projection's
// exchange; the rest comes from the turn's other facts.
type Turn struct {
	Turn       uint32    `json:"turn"`
	Generation uint32    `json:"task_generation"`
	At         time.Time `json:"at"`
	// Request is the digest of the exact request the model received; its
	// body is a blob in the store.
	Request  events.Digest `json:"request"`
	Messages uint32        `json:"messages,omitempty"`
	Policy   string        `json:"policy,omitempty"`
	Tokens   uint64        `json:"context_tokens,omitempty"`
	Reserve  uint64        `json:"reserve,omitempty"`
	Provider string        `json:"provider,omitempty"`
	Model    string        `json:"model,omitempty"`
	Finish   string        `json:"finish,omitempty"`
	// QueueWait is how long the call waited for a slot of a fleet-wide
	// model limit (0: it did not wait).
	QueueWait time.Duration `json:"queue_wait_ns,omitempty"`
	Replied   bool          `json:"replied"`
	// NoToolCall is set when the reply came with no tool call: the
	// runner read it as a proposal to finish, with no evidence.
	NoToolCall bool   `json:"no_tool_call,omitempty"`
	Reply      string `json:"reply,omitempty"`
	// ReplyBlob names the reply text moved to a blob (too large for a fact).
	ReplyBlob events.Digest `json:"reply_blob,omitempty"`
	// Cached is set when the response cache answered and the model was
	// not called: where the reply first came from.
	Cached *events.CachedReply `json:"cached,omitempty"`
	// Usage is nil when the provider reported none: unknown, not zero.
	Usage    *Usage    `json:"usage"`
	Calls    []Call    `json:"calls,omitempty"`
	Intent   *Intent   `json:"intent,omitempty"`
	Stall    *Stall    `json:"stall,omitempty"`
	Stops    []Stop    `json:"stops,omitempty"`
	Feedback []string  `json:"feedback,omitempty"`
	Steers   []string  `json:"steers,omitempty"`
	Controls []Control `json:"controls,omitempty"`
}

// Usage is what one model call consumed.
type Usage struct {
	Input  uint64  `json:"input_tokens"`
	Output uint64  `json:"output_tokens"`
	Cost   *uint64 `json:"cost"`
}

// Call is one tool call: the model's arguments, the runner's dispatch and
// its settlement.
type Call struct {
	ID         string        `json:"id"`
	Tool       string        `json:"tool"`
	Args       string        `json:"args,omitempty"`
	ArgsDigest events.Digest `json:"args_digest,omitempty"`
	// ArgsBlob names the arguments kept in a blob (too large for a fact).
	ArgsBlob  events.Digest `json:"args_blob,omitempty"`
	Operation string        `json:"operation,omitempty"`
	Effect    string        `json:"effect,omitempty"`
	Intended  bool          `json:"intended"`
	Settled   bool          `json:"settled"`
	// The settlement (when Settled).
	Disposition  string       `json:"disposition,omitempty"`
	Mutation     string       `json:"mutation,omitempty"`
	Verification string       `json:"verification,omitempty"`
	Epoch        uint64       `json:"source_epoch,omitempty"`
	Diagnostics  []Diagnostic `json:"diagnostics,omitempty"`
	Complete     bool         `json:"complete_diagnostics,omitempty"`
	Unknown      string       `json:"verification_unknown,omitempty"`
	Check        string       `json:"check,omitempty"`
	Outcome      string       `json:"outcome,omitempty"`
	Evidence     string       `json:"evidence_ref,omitempty"`
	Output       string       `json:"output,omitempty"`
	Error        *ToolError   `json:"error,omitempty"`
	// Child is the child run a delegate call started.
	Child string `json:"child,omitempty"`
}

// Diagnostic is one message of a failed verification.
type Diagnostic struct {
	Message string `json:"message"`
	File    string `json:"file,omitempty"`
	Line    uint32 `json:"line,omitempty"`
	Code    string `json:"code,omitempty"`
}

// ToolError is a call's typed error.
type ToolError struct {
	Code      string `json:"code"`
	Message   string `json:"message"`
	Retryable bool   `json:"retryable"`
}

// Intent is what the actor proposed at the end of a turn: a proposal, not
// proof.
type Intent struct {
	Type     string   `json:"type"`
	Evidence []string `json:"evidence,omitempty"`
	Reason   string   `json:"reason,omitempty"`
	Unmet    []string `json:"unmet,omitempty"`
	// Control is the control the turn's evidence says was accepted.
	Control string `json:"accepted_control,omitempty"`
}

// Stall is the stall handler's observation of a turn and its action.
type Stall struct {
	Position    uint64   `json:"position"`
	Episode     uint32   `json:"episode"`
	RepairsUsed uint32   `json:"repairs_used"`
	WriteCredit uint32   `json:"write_credit"`
	OpenFailure bool     `json:"open_failure"`
	Signature   string   `json:"signature"`
	Armed       []string `json:"armed,omitempty"`
	// Action is "none", "retry", "escalate" or "stop".
	Action    string   `json:"action"`
	Cause     string   `json:"cause,omitempty"`
	Feedback  string   `json:"feedback,omitempty"`
	Remaining uint32   `json:"remaining,omitempty"`
	Target    string   `json:"target,omitempty"`
	Unmet     []string `json:"unmet,omitempty"`
	Evidence  []string `json:"evidence,omitempty"`
}

// Stop is a stop decision on a turn.
type Stop struct {
	DecisionID string `json:"decision_id"`
	Generation uint32 `json:"task_generation"`
	// Result is "continue" or "finish".
	Result    string   `json:"result"`
	Status    string   `json:"status,omitempty"`
	Feedback  string   `json:"feedback,omitempty"`
	Reason    string   `json:"reason,omitempty"`
	Unmet     []string `json:"unmet,omitempty"`
	Supported []string `json:"supported,omitempty"`
	Evidence  []string `json:"evidence,omitempty"`
}

// Control is a control signal a runner accepted, or the task generation a
// steer started.
type Control struct {
	At          time.Time     `json:"at"`
	ID          string        `json:"id,omitempty"`
	Signal      string        `json:"signal"`
	Instruction string        `json:"instruction,omitempty"`
	CallID      string        `json:"call_id,omitempty"`
	ArgsDigest  events.Digest `json:"args_digest,omitempty"`
	Reason      string        `json:"reason,omitempty"`
	Operation   string        `json:"operation,omitempty"`
	Outcome     string        `json:"outcome,omitempty"`
	Generation  uint32        `json:"generation,omitempty"`
}

// Waiting is an operation intended and not settled on a run still going:
// its call is running or waits for a person's decision, bound to the exact
// arguments' digest.
type Waiting struct {
	Turn       uint32        `json:"turn"`
	CallID     string        `json:"call_id"`
	Tool       string        `json:"tool"`
	Operation  string        `json:"operation"`
	Effect     string        `json:"effect"`
	ArgsDigest events.Digest `json:"args_digest"`
}

// End is how the run ended, with its handoff packet.
type End struct {
	At           time.Time    `json:"at"`
	Status       string       `json:"status"`
	Reason       string       `json:"reason"`
	Steps        uint32       `json:"steps"`
	Spent        events.Spent `json:"spent"`
	LastEvidence []string     `json:"last_evidence,omitempty"`
	NextAction   string       `json:"next_action,omitempty"`
}

// Sealed is the candidate the grader grades: a workspace snapshot.
type Sealed struct {
	Snapshot events.Digest `json:"snapshot"`
	Fixture  events.Digest `json:"fixture,omitempty"`
	Files    uint32        `json:"files"`
}

// Grade is the run's grading as the grades projection holds it.
type Grade struct {
	Snapshot    events.Digest `json:"snapshot,omitempty"`
	Instruments []Instrument  `json:"instruments,omitempty"`
	Revisions   []Revision    `json:"revisions,omitempty"`
	Conflicts   []Conflict    `json:"conflicts,omitempty"`
}

// Instrument is one grade instrument's result.
type Instrument struct {
	ID       string   `json:"instrument"`
	Version  string   `json:"version"`
	Required bool     `json:"required"`
	Outcome  string   `json:"outcome"`
	Detail   string   `json:"detail,omitempty"`
	Evidence []string `json:"evidence,omitempty"`
	// Score is what the instrument measured beside its outcome: its
	// values, a JUnit tally, a judge's reasons, or why there are none.
	Score *events.InstrumentScore `json:"score,omitempty"`
}

// Revision is one verdict; later ones are added, never rewritten.
type Revision struct {
	Revision uint32   `json:"revision"`
	Result   string   `json:"result"`
	Reason   string   `json:"reason,omitempty"`
	Waiting  []string `json:"waiting_for,omitempty"`
	Vetoes   []Veto   `json:"vetoes,omitempty"`
	// Scores are the verdict's scores: each scorer's raw and mapped value,
	// or why it has none.
	Scores []events.Score `json:"scores,omitempty"`
}

// Veto is an instrument's objection to a requirement.
type Veto struct {
	Instrument  string `json:"instrument"`
	Requirement string `json:"requirement"`
	Reason      string `json:"reason"`
	Binding     bool   `json:"binding"`
}

// Conflict is a later check that disagreed with an earlier revision.
type Conflict struct {
	Revision      uint32 `json:"revision"`
	ConflictsWith uint32 `json:"conflicts_with"`
	Instrument    string `json:"instrument"`
	Reason        string `json:"reason"`
}

// FactLine is one fact of the run as an operator's line shows it.
type FactLine struct {
	Seq        uint64    `json:"seq"`
	At         time.Time `json:"at"`
	Kind       string    `json:"kind"`
	Generation uint32    `json:"task_generation"`
	Summary    string    `json:"summary"`
}

// Run returns the page of one run; false when the log has no fact of it.
func (m *Model) Run(suite, run string) (RunPage, bool) {
	key := runKey(suite, run)
	d := m.details[key]
	if d == nil {
		return RunPage{}, false
	}
	p := RunPage{Suite: suite, Run: run, Through: m.through, Claims: slices.Clone(d.claims),
		Preamble: slices.Clone(d.preamble), Log: slices.Clone(d.log), Turns: []Turn{}}
	if s := m.runs[key]; s != nil {
		p.Handoff = *s
		p.Handoff.Evidence = slices.Clone(s.Evidence)
		if s.Spent != nil {
			spent := *s.Spent
			p.Handoff.Spent = &spent
		}
	}
	if r := d.requested; r != nil {
		p.Requested = &Requested{Case: r.Case, CaseDigest: r.CaseDigest, Treatment: r.Treatment, TreatmentDigest: r.TreatmentDigest,
			Trial: r.Trial, Identity: r.Identity, Budget: Budget{Steps: r.Budget.Steps, Tokens: r.Budget.Tokens, Seconds: r.Budget.Seconds, Cost: r.Budget.Cost}}
	}
	p.Parent = d.parent
	for k, c := range m.details {
		name, ours := strings.CutPrefix(k, suite+"/")
		if ours && c.parent != nil && c.parent.Run == run {
			child := Child{Run: name, Turn: c.parent.Turn, CallID: c.parent.CallID}
			if c.ended != nil {
				child.Status = string(c.ended.Status)
			}
			p.Children = append(p.Children, child)
		}
	}
	slices.SortFunc(p.Children, func(a, b Child) int { return strings.Compare(a.Run, b.Run) })
	for _, x := range m.history[key] {
		t := d.turns[x.Turn]
		if t == nil {
			t = &turnDetail{}
		}
		p.Turns = append(p.Turns, turnOf(x, t))
	}
	if d.ended == nil {
		for _, t := range p.Turns {
			for _, c := range t.Calls {
				if c.Intended && !c.Settled {
					p.Waiting = append(p.Waiting, Waiting{Turn: t.Turn, CallID: c.ID, Tool: c.Tool, Operation: c.Operation, Effect: c.Effect, ArgsDigest: c.ArgsDigest})
				}
			}
		}
	} else {
		e := d.ended
		p.End = &End{At: d.endedAt, Status: string(e.Status), Reason: e.Reason, Steps: e.Steps, Spent: e.Spent,
			LastEvidence: strs(e.LastEvidence), NextAction: e.NextAction}
	}
	if s := d.sealed; s != nil {
		p.Sealed = &Sealed{Snapshot: s.SnapshotDigest, Fixture: s.FixtureDigest, Files: s.Files}
	}
	if g := m.grades[key]; g != nil {
		p.Grade = gradeOf(g)
	}
	if r, _, ok := m.report(suite); ok {
		for _, a := range r.Attempts {
			if a.Run == run {
				row := a
				p.Counted = &row
			}
		}
	}
	return p, true
}

// turnOf joins a history exchange with the turn's other facts.
func turnOf(x *projections.Exchange, t *turnDetail) Turn {
	out := Turn{Turn: x.Turn, Generation: x.Generation, At: t.at, Request: x.Request, Reply: x.Reply,
		Feedback: slices.Clone(x.Feedback), Steers: slices.Clone(x.Instructions), Controls: slices.Clone(t.controls)}
	if s := t.started; s != nil {
		out.Messages, out.Policy, out.Tokens, out.Reserve = s.Messages, s.Policy, s.Tokens, s.Reserve
	}
	if r := t.replied; r != nil {
		out.Replied, out.Provider, out.Model, out.Finish, out.ReplyBlob = true, r.Provider, r.Model, r.Finish, r.TextDigest
		out.Cached, out.NoToolCall = r.Cached, len(r.Calls) == 0
		out.QueueWait = time.Duration(r.QueueWaitMs) * time.Millisecond
		if u := r.Usage; u != nil {
			out.Usage = &Usage{Input: u.InputTokens, Output: u.OutputTokens, Cost: u.Cost}
		}
	}
	for _, hc := range x.Calls {
		c := Call{ID: hc.ID, Tool: hc.Tool, Args: hc.Args, ArgsBlob: hc.ArgsBlob, Output: hc.Observation}
		if r := t.replied; r != nil {
			for _, rc := range r.Calls {
				if string(rc.ID) == hc.ID {
					c.ArgsDigest = rc.ArgsDigest
				}
			}
		}
		if in, ok := t.intended[events.CallID(hc.ID)]; ok {
			c.Intended, c.Operation, c.Effect, c.ArgsDigest = true, in.OperationID, string(in.Effect), in.ArgsDigest
			if in.Delegation != nil {
				c.Child = in.Delegation.Run
			}
		}
		if done, ok := t.completed[events.CallID(hc.ID)]; ok {
			settle(&c, done)
		}
		out.Calls = append(out.Calls, c)
	}
	if e := t.evidence; e != nil {
		out.Intent = intentOf(e)
	}
	if s := t.stall; s != nil {
		out.Stall = stallOf(*s)
	}
	for _, d := range t.stops {
		out.Stops = append(out.Stops, stopOf(d))
	}
	return out
}

func settle(c *Call, done events.DispatchCompleted) {
	d := done.Dispatch
	c.Settled, c.Disposition, c.Mutation, c.Verification = true, string(d.Disposition), string(d.Mutation), d.Verification.Type()
	// done.OutputDigest is not shown: nothing writes it (a tool's output
	// is inline), so it names no blob the store holds (docs/facts.md).
	c.Check, c.Outcome, c.Evidence = d.Check, d.Outcome, string(d.EvidenceRef)
	switch v := d.Verification.Variant().(type) {
	case events.VerifyPassed:
		c.Epoch = v.SourceEpoch
	case events.VerifyFailed:
		c.Epoch, c.Complete = v.SourceEpoch, v.Complete
		for _, g := range v.Diagnostics {
			c.Diagnostics = append(c.Diagnostics, Diagnostic{Message: g.Message, File: g.File, Line: g.Line, Code: g.Code})
		}
	case events.VerifyUnknown:
		c.Unknown = v.Reason
	}
	if e := done.Error; e != nil {
		c.Error = &ToolError{Code: e.Code, Message: e.Message, Retryable: e.Retryable}
	}
}

func intentOf(e *events.RunEvidence) *Intent {
	in := &Intent{Type: e.ActorIntent.Type()}
	switch v := e.ActorIntent.Variant().(type) {
	case events.IntentProposeDone:
		in.Evidence = strs(v.Evidence)
	case events.IntentReportBlocked:
		in.Reason, in.Unmet = v.Reason, strs(v.Unmet)
	}
	if c := e.AcceptedControl; c != nil {
		in.Control = string(c.Signal) + " " + c.ID
	}
	return in
}

func stallOf(o events.StallObservation) *Stall {
	c := o.Checkpoint
	s := &Stall{Position: o.Position, Episode: c.Episode, RepairsUsed: c.RepairsUsed, WriteCredit: c.WriteCredit,
		OpenFailure: c.OpenFailure, Signature: c.Signature, Armed: slices.Clone(c.Armed), Action: "none"}
	if a := o.Action; a != nil {
		s.Action = a.Type()
		switch v := a.Variant().(type) {
		case events.StallRetry:
			s.Cause, s.Feedback, s.Remaining = v.Cause, v.Feedback, v.Remaining
		case events.StallEscalate:
			s.Cause, s.Target, s.Evidence = v.Cause, v.Target, strs(v.Evidence)
		case events.StallStop:
			s.Cause, s.Unmet, s.Evidence = v.Cause, strs(v.Unmet), strs(v.Evidence)
		}
	}
	return s
}

func stopOf(d events.StopDecision) Stop {
	s := Stop{DecisionID: d.DecisionID, Generation: d.TaskGeneration, Result: d.Result.Type()}
	switch v := d.Result.Variant().(type) {
	case events.StopContinue:
		s.Feedback, s.Unmet = v.Feedback, strs(v.Unmet)
	case events.StopFinish:
		s.Status, s.Reason, s.Unmet, s.Supported, s.Evidence = string(v.Status), v.Reason, strs(v.Unmet), strs(v.Supported), strs(v.Evidence)
	}
	return s
}

func gradeOf(g *projections.GradeRecord) *Grade {
	out := &Grade{Snapshot: g.Snapshot}
	for _, r := range g.Instruments {
		out.Instruments = append(out.Instruments, Instrument{ID: string(r.Instrument), Version: r.Version, Required: r.Required,
			Outcome: string(r.Outcome), Detail: r.Detail, Evidence: strs(r.Evidence), Score: r.Score})
	}
	for _, r := range g.Revisions {
		rev := Revision{Revision: r.Revision, Result: r.Result, Scores: r.Scores}
		switch v := r.Detail.(type) {
		case events.VerdictPending:
			rev.Waiting = strs(v.Instruments)
		case events.VerdictInvalid:
			rev.Reason = v.Reason
		case events.VerdictAbstained:
			rev.Reason = v.Reason
		}
		for _, v := range r.Vetoes {
			rev.Vetoes = append(rev.Vetoes, Veto{Instrument: string(v.Instrument), Requirement: string(v.Requirement), Reason: v.Reason, Binding: v.Binding})
		}
		out.Revisions = append(out.Revisions, rev)
	}
	for _, c := range g.Conflicts {
		out.Conflicts = append(out.Conflicts, Conflict{Revision: c.Revision, ConflictsWith: c.ConflictsWith, Instrument: string(c.Instrument), Reason: c.Reason})
	}
	return out
}

// strs converts a slice of string-typed IDs.
func strs[S ~string](in []S) []string {
	if len(in) == 0 {
		return nil
	}
	out := make([]string, len(in))
	for i, s := range in {
		out[i] = string(s)
	}
	return out
}
