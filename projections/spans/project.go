package spans

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/factline/factline/events"
)

// Options say what the projection puts into spans besides the facts'
// structure.
type Options struct {
	// Content adds what the model wrote and the tools were given and
	// returned (GenAI's opt-in content attributes). Off by default: a
	// trace backend is read by more people than the log.
	Content bool
	// Redact is applied to every string a span carries (names,
	// attributes, events, status messages) as it is emitted; nil leaves
	// them as they are. The facts are redacted when made; this catches
	// what an older log, or a secret only this process knows, let through.
	Redact func(string) string
}

// Projector folds facts into spans. Apply returns the spans a fact
// finishes, each exactly once; Flush returns those still open. It is not
// safe for concurrent use.
type Projector struct {
	o      Options
	suites map[string]*suiteState
	runs   map[string]*runState
}

type suiteState struct {
	span *Span // nil once emitted
	// trace and id stay after the span is emitted: later runs link to it.
	trace TraceID
	id    SpanID
	last  time.Time
}

type runState struct {
	root   *Span // nil once emitted
	trace  TraceID
	rootID SpanID
	last   time.Time // the run's previous fact
	turns  map[uint32]*Span
	models map[uint32]*Span
	// effects remembers each dispatch's effect class (outcome inference)
	// and args each call's arguments (content).
	dispatches map[events.CallID]*Span
	effects    map[events.CallID]events.EffectClass
	args       map[events.CallID]string
	// argsBlob names the arguments of a call kept in a blob.
	argsBlob map[events.CallID]events.Digest
	grade    *Span
}

// New returns a projector with nothing seen.
func New(o Options) *Projector {
	return &Projector{o: o, suites: map[string]*suiteState{}, runs: map[string]*runState{}}
}

// Project is the whole projection of a finished log: every span its facts
// close, then the ones still open.
func Project(facts []events.Fact, o Options) []Span {
	p := New(o)
	var out []Span
	for _, f := range facts {
		out = append(out, p.Apply(f)...)
	}
	return append(out, p.Flush()...)
}

// Apply folds one fact and returns the spans it finishes.
func (p *Projector) Apply(f events.Fact) []Span {
	if f.Run == events.SuiteScope {
		return p.suiteFact(f)
	}
	if s := p.suites[f.Suite]; s != nil {
		s.last = maxTime(s.last, f.At)
	}
	r := p.run(f)
	var done []*Span
	switch b := f.Body.(type) {
	case events.RunClaimed:
		r.event(f, "run.claimed", Str("factline.runner", b.Runner), Int("factline.lease", b.Lease))
	case events.ControlAccepted:
		r.event(f, "control.accepted", Str("factline.control.signal", string(b.Control.Signal)), Str("factline.control.id", b.Control.ID))
	case events.TaskGenerationStarted:
		r.event(f, "task.generation", Int("factline.task_generation", b.Generation))
	case events.TurnStarted:
		done = r.closeTurns(f.At)
		t := &Span{Trace: r.trace, ID: spanOf(f.ID, "turn"), Parent: r.rootID, Name: fmt.Sprintf("turn %d", b.Turn), Start: f.At,
			Attrs: []Attr{Int("factline.turn", b.Turn), Int("factline.context.messages", b.Messages)}}
		if b.Policy != "" {
			t.Attrs = append(t.Attrs, Str("factline.context.policy", b.Policy))
		}
		r.turns[b.Turn] = t
		r.models[b.Turn] = &Span{Trace: r.trace, ID: spanOf(f.ID, "model"), Parent: t.ID, Name: "chat", Kind: KindClient, Start: f.At,
			Attrs: []Attr{Str("gen_ai.operation.name", "chat"), Str("gen_ai.conversation.id", f.Run)}}
	case events.ModelReplied:
		m := r.models[b.Turn]
		delete(r.models, b.Turn)
		if m == nil { // its turn.started is before the replay's start
			m = &Span{Trace: r.trace, ID: spanOf(f.ID, "model"), Parent: r.parentOf(b.Turn), Name: "chat", Kind: KindClient, Start: r.last,
				Attrs: []Attr{Str("gen_ai.operation.name", "chat"), Str("gen_ai.conversation.id", f.Run)}}
		}
		p.modelReply(m, b)
		m.End = f.At
		for _, c := range b.Calls {
			r.args[c.ID] = c.Args
			if c.ArgsInBlob() {
				r.argsBlob[c.ID] = c.ArgsDigest
			}
		}
		done = append(done, m)
	case events.ContextSummarised:
		// The summary call has no fact of its own before its reply: it
		// began when the run's previous fact was committed.
		m := &Span{Trace: r.trace, ID: spanOf(f.ID, "summary"), Parent: r.rootID, Kind: KindClient, Start: r.last, End: f.At,
			Attrs: []Attr{Str("gen_ai.operation.name", "chat"), Str("gen_ai.conversation.id", f.Run), Str("factline.model.purpose", "summary"),
				Int("factline.summary.from", b.From), Int("factline.summary.through", b.Through), Int("factline.turn", b.Turn)}}
		p.model(m, b.Provider, b.Model, b.Usage)
		if p.o.Content {
			m.Attrs = append(m.Attrs, Str("gen_ai.output.messages", outputMessages(b.Summary, nil, "")))
		}
		done = append(done, m)
	case events.DispatchIntended:
		r.effects[b.CallID] = b.Effect
		r.dispatches[b.CallID] = &Span{Trace: r.trace, ID: spanOf(f.ID, "dispatch"), Parent: r.parentOf(b.Turn), Start: f.At,
			Attrs: []Attr{Str("factline.operation.id", b.OperationID)}}
		r.dispatches[b.CallID].Name = "execute_tool " + b.Tool
	case events.DispatchCompleted:
		d := b.Dispatch
		s := r.dispatches[d.CallID]
		delete(r.dispatches, d.CallID)
		if s == nil { // never intended (rejected before dispatch), or intended before the replay's start
			s = &Span{Trace: r.trace, ID: spanOf(f.ID, "dispatch"), Parent: r.parentOf(b.Turn), Start: r.last}
		}
		p.dispatch(s, r, b)
		s.End = f.At
		done = append(done, s)
	case events.TurnCompleted:
		t := r.turn(b.Evidence.Turn, f)
		t.End = f.At
		t.Attrs = append(t.Attrs, Str("factline.actor_intent", b.Evidence.ActorIntent.Type()), Int("factline.dispatches", len(b.Evidence.Dispatches)))
	case events.StallObserved:
		attrs := []Attr{Int("factline.turn", b.Turn)}
		if b.Observation.Action != nil {
			attrs = append(attrs, Str("factline.stall.action", b.Observation.Action.Type()))
		}
		t := r.turn(b.Turn, f)
		t.Events = append(t.Events, Event{Name: "stall.observed", At: f.At, Attrs: attrs})
	case events.StopDecided:
		d := b.Decision
		t := r.turn(d.Turn, f)
		delete(r.turns, d.Turn)
		t.Attrs = append(t.Attrs, Str("factline.stop.result", d.Result.Type()))
		if fin, ok := d.Result.Variant().(events.StopFinish); ok {
			t.Attrs = append(t.Attrs, Str("factline.stop.status", string(fin.Status)), Str("factline.stop.reason", fin.Reason))
		}
		t.End = f.At
		done = append(done, t)
	case events.RunEnded:
		done = r.closeTurns(f.At)
		if root := r.root; root != nil {
			root.Attrs = append(root.Attrs, Str("factline.run.status", string(b.Status)), Str("factline.run.reason", b.Reason),
				Int("factline.spent.steps", b.Spent.Steps), Int("factline.spent.millis", b.Spent.Millis))
			if b.Spent.Tokens != nil {
				root.Attrs = append(root.Attrs, Int("factline.spent.tokens", *b.Spent.Tokens))
			}
			if b.Spent.Cost != nil {
				root.Attrs = append(root.Attrs, Int("factline.spent.cost", *b.Spent.Cost))
			}
			if b.Status == events.RunErrored {
				root.Status, root.StatusMessage = StatusError, b.Reason
			}
			root.End = f.At
			done = append(done, root)
			r.root = nil
		}
	case events.CandidateSealed:
		if r.grade == nil {
			r.grade = &Span{Trace: r.trace, ID: spanOf(f.ID, "grade"), Parent: r.rootID, Name: "grade", Start: f.At,
				Attrs: []Attr{Str("factline.snapshot", string(b.SnapshotDigest)), Int("factline.snapshot.files", b.Files)}}
		}
	case events.GradeInstrument:
		g := r.gradeSpan(f)
		res := b.Result
		s := &Span{Trace: r.trace, ID: spanOf(f.ID, "instrument"), Parent: g.ID, Name: "grade " + string(res.Instrument),
			Start: r.last, End: f.At, Attrs: []Attr{Str("factline.grade.instrument", string(res.Instrument)),
				Str("factline.grade.version", res.Version), Bool("factline.grade.required", res.Required), Str("factline.grade.outcome", string(res.Outcome))}}
		if b.Judge != nil {
			p.model(s, "", b.Judge.Model, b.Judge.Usage)
		}
		if res.Outcome == events.InstrumentErrored {
			// The grader could not run it: its failure, unlike a check
			// that ran and failed, which is the agent's.
			s.Status, s.StatusMessage = StatusError, "instrument errored"
		}
		done = append(done, s)
	case events.GradeVerdict:
		g := r.gradeSpan(f)
		r.grade = nil
		g.Attrs = append(g.Attrs, Int("factline.grade.revision", b.Verdict.Revision), Str("factline.grade.result", b.Verdict.Result.Type()))
		g.End = f.At
		done = append(done, g)
	case events.GradeConflict:
		done = append(done, &Span{Trace: r.trace, ID: spanOf(f.ID, "conflict"), Parent: r.rootID, Name: "grade conflict", Start: f.At, End: f.At,
			Attrs: []Attr{Str("factline.grade.instrument", string(b.Instrument)), Int("factline.grade.revision", b.Revision),
				Int("factline.grade.conflicts_with", b.ConflictsWith), Str("factline.grade.reason", b.Reason)}})
	}
	r.last = f.At
	return p.emit(done)
}

// run returns the state of f's run, starting it at f: at its
// run.requested, whose ID is the trace's, or, for a run whose start the
// replay does not hold, at its first fact seen, marked partial.
func (p *Projector) run(f events.Fact) *runState {
	key := f.Suite + "/" + f.Run
	if r := p.runs[key]; r != nil {
		return r
	}
	r := &runState{trace: traceOf(f.ID), rootID: spanOf(f.ID, "run"), last: f.At,
		turns: map[uint32]*Span{}, models: map[uint32]*Span{}, dispatches: map[events.CallID]*Span{},
		effects: map[events.CallID]events.EffectClass{}, args: map[events.CallID]string{},
		argsBlob: map[events.CallID]events.Digest{}}
	root := &Span{Trace: r.trace, ID: r.rootID, Name: "invoke_agent", Start: f.At,
		Attrs: []Attr{Str("gen_ai.operation.name", "invoke_agent"), Str("factline.suite", f.Suite), Str("factline.run", f.Run)}}
	if b, ok := f.Body.(events.RunRequested); ok {
		root.Name += " " + b.Treatment
		root.Attrs = append(root.Attrs, Str("gen_ai.agent.name", b.Treatment), Str("factline.case", b.Case), Str("factline.treatment", b.Treatment),
			Int("factline.trial", b.Trial))
		if b.Identity != "" {
			root.Attrs = append(root.Attrs, Str("gen_ai.agent.id", string(b.Identity)))
		}
		if b.RetryOf != "" {
			root.Attrs = append(root.Attrs, Str("factline.retry_of", b.RetryOf))
		}
	} else {
		root.Attrs = append(root.Attrs, Bool("factline.partial", true))
	}
	if s := p.suites[f.Suite]; s != nil {
		root.Links = []Link{{Trace: s.trace, Span: s.id}}
	}
	r.root = root
	p.runs[key] = r
	return r
}

// parentOf is the span a turn's child hangs from: the turn's, or the
// run's when the turn's start is not in the replay.
func (r *runState) parentOf(turn uint32) SpanID {
	if t := r.turns[turn]; t != nil {
		return t.ID
	}
	return r.rootID
}

// turn returns the open span of the turn, opening one at the run's
// previous fact when its turn.started is not in the replay.
func (r *runState) turn(n uint32, f events.Fact) *Span {
	if t := r.turns[n]; t != nil {
		return t
	}
	t := &Span{Trace: r.trace, ID: spanOf(f.ID, "turn"), Parent: r.rootID, Name: fmt.Sprintf("turn %d", n), Start: r.last,
		Attrs: []Attr{Int("factline.turn", n), Bool("factline.partial", true)}}
	r.turns[n] = t
	return t
}

// gradeSpan returns the open grade span, opening one at the run's
// previous fact for a revision that no seal precedes (a regrade).
func (r *runState) gradeSpan(f events.Fact) *Span {
	if r.grade == nil {
		r.grade = &Span{Trace: r.trace, ID: spanOf(f.ID, "grade"), Parent: r.rootID, Name: "grade", Start: r.last}
	}
	return r.grade
}

// event adds a fact without a span of its own to the run's span.
func (r *runState) event(f events.Fact, name string, attrs ...Attr) {
	if r.root != nil {
		r.root.Events = append(r.root.Events, Event{Name: name, At: f.At, Attrs: attrs})
	}
}

// closeTurns ends every open turn, model call and dispatch of the run at
// at: a new turn or the run's end interrupted them. A turn that completed
// keeps its completion's time.
func (r *runState) closeTurns(at time.Time) []*Span {
	var out []*Span
	for _, id := range slices.Sorted(maps.Keys(r.dispatches)) {
		out = append(out, interrupted(r.dispatches[id], at))
	}
	for _, n := range slices.Sorted(maps.Keys(r.models)) {
		out = append(out, interrupted(r.models[n], at))
	}
	for _, n := range slices.Sorted(maps.Keys(r.turns)) {
		out = append(out, interrupted(r.turns[n], at))
	}
	clear(r.dispatches)
	clear(r.models)
	clear(r.turns)
	return out
}

func interrupted(s *Span, at time.Time) *Span {
	if s.End.IsZero() {
		s.End = at
		s.Attrs = append(s.Attrs, Bool("factline.interrupted", true))
	}
	return s
}

// Flush returns every span still open, ended at its run's (or suite's)
// last fact and marked factline.open, and forgets them.
func (p *Projector) Flush() []Span {
	var out []*Span
	open := func(s *Span, at time.Time) {
		s.End = maxTime(at, s.Start)
		s.Attrs = append(s.Attrs, Bool("factline.open", true))
		out = append(out, s)
	}
	for _, k := range slices.Sorted(maps.Keys(p.runs)) {
		r := p.runs[k]
		for _, id := range slices.Sorted(maps.Keys(r.dispatches)) {
			open(r.dispatches[id], r.last)
		}
		for _, n := range slices.Sorted(maps.Keys(r.models)) {
			open(r.models[n], r.last)
		}
		for _, n := range slices.Sorted(maps.Keys(r.turns)) {
			t := r.turns[n]
			open(t, maxTime(r.last, t.End))
		}
		if r.grade != nil {
			open(r.grade, r.last)
		}
		if r.root != nil {
			open(r.root, r.last)
		}
		clear(r.dispatches)
		clear(r.models)
		clear(r.turns)
		r.grade, r.root = nil, nil
	}
	for _, k := range slices.Sorted(maps.Keys(p.suites)) {
		if s := p.suites[k]; s.span != nil {
			open(s.span, s.last)
			s.span = nil
		}
	}
	return p.emit(out)
}

func (p *Projector) suiteFact(f events.Fact) []Span {
	s := p.suites[f.Suite]
	switch b := f.Body.(type) {
	case events.SuiteSubmitted:
		s = &suiteState{trace: traceOf(f.ID), id: spanOf(f.ID, "suite"), last: f.At}
		s.span = &Span{Trace: s.trace, ID: s.id, Name: "suite " + b.Name, Start: f.At, Attrs: []Attr{
			Str("factline.suite", f.Suite), Int("factline.suite.cases", len(b.Cases)), Int("factline.suite.treatments", len(b.Treatments)),
			Int("factline.suite.trials", b.Trials)}}
		if b.Split != "" {
			s.span.Attrs = append(s.span.Attrs, Str("factline.suite.split", b.Split))
		}
		p.suites[f.Suite] = s
	case events.SuiteStopped:
		if s != nil && s.span != nil {
			s.span.Events = append(s.span.Events, Event{Name: "suite.stopped", At: f.At, Attrs: []Attr{
				Str("factline.suite.comparison", b.Comparison), Str("factline.suite.stop_reason", b.Reason), Int("factline.suite.pairs", b.Pairs)}})
		}
	case events.SuiteReported:
		if s == nil || s.span == nil {
			return nil // its submission is before the replay's start
		}
		sp := s.span
		s.span = nil
		sp.Attrs = append(sp.Attrs, Int("factline.suite.attempts", b.Attempts), Int("factline.suite.passed", b.Passed),
			Int("factline.suite.failed", b.Failed), Int("factline.suite.pending", b.Pending), Int("factline.suite.invalid", b.Invalid),
			Int("factline.suite.abstained", b.Abstained), Int("factline.suite.excluded", b.Excluded))
		sp.End = f.At
		return p.emit([]*Span{sp})
	}
	if s != nil {
		s.last = maxTime(s.last, f.At)
	}
	return nil
}

// emit copies the finished spans out, redacted.
func (p *Projector) emit(done []*Span) []Span {
	if len(done) == 0 {
		return nil
	}
	out := make([]Span, len(done))
	for i, s := range done {
		out[i] = p.redact(*s)
	}
	return out
}

func (p *Projector) redact(s Span) Span {
	if p.o.Redact == nil {
		return s
	}
	r := p.o.Redact
	attrs := func(as []Attr) []Attr {
		out := make([]Attr, len(as))
		for i, a := range as {
			out[i] = Attr{Key: r(a.Key), Value: a.Value}
			switch a.Value.Type {
			case TypeString:
				out[i].Value.Str = r(a.Value.Str)
			case TypeStrings:
				out[i].Value.Strings = make([]string, len(a.Value.Strings))
				for j, v := range a.Value.Strings {
					out[i].Value.Strings[j] = r(v)
				}
			}
		}
		return out
	}
	s.Name, s.StatusMessage = r(s.Name), r(s.StatusMessage)
	s.Attrs = attrs(s.Attrs)
	if len(s.Events) > 0 {
		evs := make([]Event, len(s.Events))
		for i, e := range s.Events {
			evs[i] = Event{Name: r(e.Name), At: e.At, Attrs: attrs(e.Attrs)}
		}
		s.Events = evs
	}
	if len(s.Links) > 0 {
		links := make([]Link, len(s.Links))
		for i, l := range s.Links {
			links[i] = Link{Trace: l.Trace, Span: l.Span, Attrs: attrs(l.Attrs)}
		}
		s.Links = links
	}
	return s
}

func maxTime(a, b time.Time) time.Time {
	if cmp.Compare(a.UnixNano(), b.UnixNano()) >= 0 {
		return a
	}
	return b
}
