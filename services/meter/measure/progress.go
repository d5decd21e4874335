package measure

import (
	"fmt"

	"github.com/factline/factline/events"
	"github.com/factline/factline/projections"
)

// Tally is a suite's running count of its planned attempts, counted as the
// report counts them: Graded is passed + failed of attempts whose grade
// counts (never an excluded run's grade, a pending, invalid, abstained or
// disputed one), Passed only those graded passed.
type Tally struct {
	Started  int
	Ended    int
	Graded   int
	Passed   int
	Excluded int
	// Settled counts attempts no longer awaiting anything (ended and
	// graded, excluded, or terminally pending); disputed ones are not.
	Settled int
}

// Earlier returns the facts of a run committed before the fact a Counter
// is applying, in log order: the caller reads them back from the log (a
// run's own facts, O(facts of the run)) when the Counter needs a run it
// let go of.
type Earlier func(run string) ([]events.Fact, error)

// Counter keeps a suite's Tally up to date as its facts arrive, one fact
// at a time, for a progress line that must say what the report will say,
// and for the meter, which reports a suite once its every attempt is
// settled. Each fact re-classifies only its own run (with the report's own
// rules, row), so following a suite costs O(facts), not O(facts × runs).
//
// Its memory follows the runs in flight, not the suite: it keeps the
// folded facts of the planned attempts not settled yet, and of the suite
// as a whole five bytes per planned attempt (how its row counts, and when
// it was graded), the retries,
// and the roster's cases and treatments. An attempt's facts are let go
// when it settles; a later fact of its run (a regrade, a resumed grade)
// has them read back through Earlier.
//
// A run counts for the planned attempt whose run ID it has, or, for a
// retry, whose chain of retries it ends (as Build follows them). A retry
// whose run.requested arrives before that of the run it retries (only a
// forged log orders them so) is not counted, where Build would count it.
type Counter struct {
	suite   string
	sub     *events.SuiteSubmitted
	valid   []events.RunStatus
	roster  rosterIndex
	cases   map[string][]int // case ID → its indexes in the roster (one, unless IDs repeat)
	treats  map[string][]int
	stopped bool
	// control folds the suite's operator controls; notRunMarked says its
	// members never requested were settled as not run (drained or
	// cancelled).
	control      projections.SuiteControl
	notRunMarked bool

	// codes holds, by member, how its counted run's row counts (0: not
	// started, not ended, awaiting); gradedAt when its newest verdict
	// arrived, in facts applied (Attempt.GradedAt).
	codes    perMember[rowCode]
	gradedAt perMember[uint32]
	// requested holds which members have a run.requested under their
	// own run ID: the meter requests a suite in windows (ToRequest).
	requested requestedSet
	// open holds the counted runs not settled yet, with their facts.
	open map[string]*openRun
	// retriedBy maps a run to its retry (the first requested), retryOf
	// the other way.
	retriedBy, retryOf map[string]string
	// ignored remembers runs read back that count for no planned attempt,
	// so that their next facts are not read back again. Bounded: losing
	// it only costs reading a run again.
	ignored map[string]bool

	applied int
	// shared keeps one copy of what the runs in flight repeat.
	shared sharedValues
	tally  Tally
	// graded counts changes of a member's grade (passed or failed, and
	// when): what an early-stopping decision reads.
	graded uint64
}

// openRun is a counted run in flight: its folded facts and the members
// it counts for.
type openRun struct {
	a       *Attempt
	members []int
}

// maxIgnored bounds Counter.ignored.
const maxIgnored = 4096

// NewCounter returns the counter of a suite with no facts yet.
func NewCounter(suite string) *Counter {
	return &Counter{suite: suite, open: map[string]*openRun{}, control: projections.SuiteControl{Suite: suite, State: projections.SuiteActive}}
}

// Submitted returns the suite's submission, nil before it is applied.
func (c *Counter) Submitted() *events.SuiteSubmitted { return c.sub }

// Tally returns the counts so far.
func (c *Counter) Tally() Tally { return c.tally }

// Complete says whether every planned attempt is settled: what makes
// Build's report complete.
func (c *Counter) Complete() bool {
	return c.sub != nil && uint64(c.tally.Settled) == Size(*c.sub)
}

// Control is the suite's state after its operator controls
// (suite.controlled) applied so far.
func (c *Counter) Control() projections.SuiteControl { return c.control }

// markNotRun settles, once the suite is drained or cancelled, its members
// never requested: they never run, and are excluded as Build excludes
// them. A member requested later after all (a meter that raced the
// control) is counted by its run again.
func (c *Counter) markNotRun() {
	if c.sub == nil || c.notRunMarked || !c.control.Ends() {
		return
	}
	c.notRunMarked = true
	var r AttemptRow
	notRun(&r, c.control.State)
	code := codeOf(r)
	for i := uint64(0); i < Size(*c.sub); i++ {
		if c.requested.has(i) || c.codes.get(int(i)) != 0 {
			continue
		}
		c.tally.add(0, -1)
		c.tally.add(code, 1)
		c.codes.set(int(i), code)
	}
}

// Stopped says whether the suite's suite.stopped was applied.
func (c *Counter) Stopped() bool { return c.stopped }

// GradeChanges counts the changes of any attempt's grade so far (whether
// it is passed or failed, and when it was graded): an early-stopping
// decision need only be made again when it moved.
func (c *Counter) GradeChanges() uint64 { return c.graded }

// InFlight is how many runs the counter holds the facts of.
func (c *Counter) InFlight() int { return len(c.open) }

// Apply folds one fact of the suite (facts of other suites are ignored)
// and re-counts the run it belongs to. A fact of a run the counter let go
// of has the run's earlier facts read back through earlier; its error is
// returned, and the fact is then not applied: apply it again.
func (c *Counter) Apply(f events.Fact, earlier Earlier) error {
	if f.Suite != c.suite {
		return nil
	}
	c.applied++
	switch b := f.Body.(type) {
	case events.SuiteSubmitted:
		if c.sub == nil { // the first submission fixes the roster
			c.start(b)
		}
		return nil
	case events.SuiteStopped:
		c.stopped = true
		return nil
	case events.SuiteControlled:
		c.control.Apply(f)
		c.markNotRun()
		return nil
	case events.SuiteReported:
		return nil
	}
	if f.Run == events.SuiteScope || c.sub == nil {
		return nil
	}
	if _, ok := f.Body.(events.RunRequested); ok {
		c.markRequested(f.Run)
	}
	if o, ok := c.open[f.Run]; ok {
		o.a.apply(&c.shared, f, c.applied)
		c.count(f.Run, o.a, o.members, f)
		return nil
	}
	if rq, ok := f.Body.(events.RunRequested); ok {
		// A run's first fact: nothing to read back.
		c.link(f.Run, rq)
		a := newAttempt()
		a.apply(&c.shared, f, c.applied)
		c.place(f.Run, a, f)
		return nil
	}
	if c.ignored[f.Run] {
		return nil
	}
	if members := c.membersOf(f.Run, nil); len(members) > 0 && c.bare(members) {
		// Let go of with nothing but its run.requested: its row had
		// nothing to count, and nothing needs reading back.
		a := newAttempt()
		a.apply(&c.shared, f, c.applied)
		c.count(f.Run, a, members, f)
		return nil
	}
	if earlier == nil {
		return fmt.Errorf("count %s/%s: its earlier facts are needed and there is no way to read them", c.suite, f.Run)
	}
	facts, err := earlier(f.Run)
	if err != nil {
		c.applied--
		return fmt.Errorf("count %s/%s: read its earlier facts: %w", c.suite, f.Run, err)
	}
	a := newAttempt()
	for _, e := range facts {
		if e.Run == f.Run && e.Suite == c.suite {
			a.apply(&c.shared, e, 0)
		}
	}
	a.apply(&c.shared, f, c.applied)
	c.place(f.Run, a, f)
	return nil
}

// start sets the roster up from the submission.
func (c *Counter) start(s events.SuiteSubmitted) {
	c.sub = &s
	c.valid = s.ValidOutcomes
	if len(c.valid) == 0 {
		c.valid = defaultValid
	}
	c.roster = newRosterIndex(s)
	c.cases, c.treats = map[string][]int{}, map[string][]int{}
	for i, x := range s.Cases {
		c.cases[x.ID] = append(c.cases[x.ID], i)
	}
	for i, x := range s.Treatments {
		c.treats[x.ID] = append(c.treats[x.ID], i)
	}
	c.codes = newPerMember[rowCode](Size(s))
	c.gradedAt = newPerMember[uint32](Size(s))
	c.requested = newRequestedSet(Size(s))
}

// link records a retry's place in its chain, as Log does.
func (c *Counter) link(run string, rq events.RunRequested) {
	if rq.RetryOf == "" {
		return
	}
	if c.retriedBy == nil {
		c.retriedBy, c.retryOf = map[string]string{}, map[string]string{}
	}
	if _, taken := c.retriedBy[rq.RetryOf]; !taken {
		c.retriedBy[rq.RetryOf] = run
		c.retryOf[run] = rq.RetryOf
	}
}

// place counts a run the counter did not hold: for the members it is the
// counted run of, it replaces what counted before (a retry replaces the
// run it retries). A run that counts for none is let go.
func (c *Counter) place(run string, a *Attempt, f events.Fact) {
	var rq *events.RunRequested
	if r, ok := a.Request(); ok {
		rq = &r
	}
	members := c.membersOf(run, rq)
	if len(members) == 0 {
		if len(c.ignored) >= maxIgnored {
			clear(c.ignored)
		}
		if c.ignored == nil {
			c.ignored = map[string]bool{}
		}
		c.ignored[run] = true
		return
	}
	if prev, ok := c.retryOf[run]; ok {
		delete(c.open, prev) // no longer counted: its retry is
	}
	c.count(run, a, members, f)
}

// bare says whether the members' rows count nothing yet: their run, if
// any, has only been requested.
func (c *Counter) bare(members []int) bool {
	for _, i := range members {
		if c.codes.get(i) != 0 {
			return false
		}
	}
	return true
}

// count re-classifies the members a run counts for after fact f, and
// holds the run's facts while it is not settled and holds more than its
// run.requested (which counts for nothing: the requested runs waiting for
// a runner, as many as the meter's window, are not held).
func (c *Counter) count(run string, a *Attempt, members []int, f events.Fact) {
	settled := true
	for _, i := range members {
		m := c.roster.member(i%len(c.roster.prefix), uint32(i/len(c.roster.prefix))+1)
		r := row(m, a, c.valid, c.sub.Required)
		now := codeOf(r)
		old := c.codes.get(i)
		at := c.gradedAt.get(i)
		if _, ok := f.Body.(events.RunRequested); ok && f.Run == run {
			at = 0 // a new run of the member: not graded yet
		}
		if _, ok := f.Body.(events.GradeVerdict); ok && a.GradedAt() == c.applied {
			at = uint32(min(c.applied, 1<<32-1))
		}
		if old != now {
			c.tally.add(old, -1)
			c.tally.add(now, 1)
			c.codes.set(i, now)
		}
		if (old.graded() || now.graded()) && (old.outcome() != now.outcome() || at != c.gradedAt.get(i)) {
			c.graded++
		}
		c.gradedAt.set(i, at)
		if !now.settled() {
			settled = false
		}
	}
	requestedOnly := a.onlyRequested() && c.bare(members)
	if settled || requestedOnly {
		delete(c.open, run)
		return
	}
	if o, ok := c.open[run]; ok {
		o.a, o.members = a, members
		return
	}
	c.open[run] = &openRun{a: a, members: members}
}

// membersOf returns the members whose counted run is run: those whose
// run ID begins its chain of retries, with the case, treatment and trial
// its run.requested names (or, without one, those its ID names), and
// whose chain ends at run. A run it cannot place is counted nowhere.
func (c *Counter) membersOf(run string, rq *events.RunRequested) []int {
	first := run
	if c.retryOf != nil {
		seen := map[string]bool{run: true}
		for prev, ok := c.retryOf[first]; ok && !seen[prev]; prev, ok = c.retryOf[first] {
			seen[prev] = true
			first = prev
		}
	}
	if c.end(first) != run {
		return nil
	}
	if rq == nil {
		return c.roster.members(first)
	}
	if rq.Trial < 1 || rq.Trial > c.sub.Trials {
		return nil
	}
	var out []int
	pairs := len(c.roster.prefix)
	for _, ci := range c.cases[rq.Case] {
		for _, ti := range c.treats[rq.Treatment] {
			pair := ci*len(c.sub.Treatments) + ti
			if c.roster.member(pair, rq.Trial).Run == first {
				out = append(out, int(rq.Trial-1)*pairs+pair)
			}
		}
	}
	return out
}

// end follows a run's chain of retries to its newest run.
func (c *Counter) end(run string) string {
	if c.retriedBy == nil {
		return run
	}
	seen := map[string]bool{run: true}
	for next, ok := c.retriedBy[run]; ok && !seen[next]; next, ok = c.retriedBy[run] {
		seen[next] = true
		run = next
	}
	return run
}

// rowCode is how an attempt row counts in a Tally, in a byte: bit 0
// started, bit 1 ended, bits 2–5 the outcome (0: awaiting).
type rowCode uint8

var outcomeCodes = []Outcome{OutcomeAwaiting, OutcomePassed, OutcomeFailed, OutcomePending, OutcomeInvalid,
	OutcomeAbstained, OutcomeExcluded, OutcomeDisputed}

func codeOf(r AttemptRow) rowCode {
	var c rowCode
	if r.Started {
		c |= 1
	}
	if r.Status != "" {
		c |= 2
	}
	for i, o := range outcomeCodes {
		if o == r.Outcome {
			c |= rowCode(i) << 2
		}
	}
	return c
}

func (c rowCode) outcome() Outcome { return outcomeCodes[int(c>>2)%len(outcomeCodes)] }
func (c rowCode) graded() bool {
	return c.outcome() == OutcomePassed || c.outcome() == OutcomeFailed
}
func (c rowCode) settled() bool {
	return c.outcome() != OutcomeAwaiting && c.outcome() != OutcomeDisputed
}

func (t *Tally) add(c rowCode, n int) {
	if c&1 != 0 {
		t.Started += n
	}
	if c&2 != 0 {
		t.Ended += n
	}
	switch c.outcome() {
	case OutcomePassed:
		t.Passed += n
		t.Graded += n
	case OutcomeFailed:
		t.Graded += n
	case OutcomeExcluded:
		t.Excluded += n
	}
	if c.settled() {
		t.Settled += n
	}
}

// perMember holds a small number per planned attempt: a slice for any
// suite the bounds allow, a map (of the attempts not zero) for one past
// them, so that a forged roster of billions costs nothing up front.
type perMember[T rowCode | uint32] struct {
	dense  []T
	sparse map[int]T
}

// maxDense bounds the members held in a slice (a suite has at most
// 100,000: suites.MaxRuns).
const maxDense = 1 << 22

func newPerMember[T rowCode | uint32](n uint64) perMember[T] {
	if n <= maxDense {
		return perMember[T]{dense: make([]T, n)}
	}
	return perMember[T]{sparse: map[int]T{}}
}

func (m *perMember[T]) get(i int) T {
	if m.sparse != nil {
		return m.sparse[i]
	}
	return m.dense[i]
}

func (m *perMember[T]) set(i int, v T) {
	switch {
	case m.sparse == nil:
		m.dense[i] = v
	case v == 0:
		delete(m.sparse, i)
	default:
		m.sparse[i] = v
	}
}
