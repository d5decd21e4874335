// Package meter is the meter stick's service shell. It consumes
// suite.submitted, requesting the roster's attempts as run.requested facts
// with deterministic run and message IDs (so a redelivered fact requests
// nothing twice), each carrying the attempt's agent identity, a window of
// them at a time: no more than the window are requested and not ended,
// and each run.ended lets the next be requested. What is requested is
// read from the log, never remembered, so a meter that restarts requests
// exactly the attempts still to request. It also consumes run.ended,
// grade.verdict and suite.controlled (a paused, drained or cancelled
// suite is requested no further; a resume requests again), folding the
// suite's facts with the pure core in package measure until every planned attempt is settled, when it stores the
// report as a blob and appends suite.reported. The report is also the
// "suites" projection, which anyone can rebuild from the log.
package meter

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/factline/factline/bus"
	"github.com/factline/factline/cases"
	"github.com/factline/factline/events"
	"github.com/factline/factline/services/kit"
	"github.com/factline/factline/services/meter/measure"
	"github.com/factline/factline/suites"
)

// ConsumerName is the durable consumer every meter instance shares.
const ConsumerName = "meter"

// spec is the meter to the kit. Its instances are named
// meter-<host>-<pid> by default; it loads no runs one by one and reads no
// cases through a cache, but keeps up to 64 suites' folded facts.
var spec = kit.Spec{
	Owner:    events.OwnerMeter,
	Consumer: ConsumerName,
	Filters: []string{events.KindFilter(events.KindSuiteSubmitted), events.KindFilter(events.KindRunEnded),
		events.KindFilter(events.KindGradeVerdict), events.KindFilter(events.KindSuiteControlled)},
	InstancePrefix: "meter",
	SuiteCache:     64,
}

// config is the meter's own settings.
type config struct {
	window uint64
}

// WithRequestWindow sets how many of a suite's planned attempts may be
// requested and not ended at once (default measure.DefaultWindow): a
// few times the runs the fleet drives at once keeps every runner busy.
// Every meter instance of a fleet should agree; one with a larger window
// only requests further ahead.
func WithRequestWindow(n int) kit.Option {
	return kit.OwnIf("WithRequestWindow", n >= 1, fmt.Sprintf("window %d; a suite needs at least one run requested at a time", n),
		func(c *config) { c.window = uint64(n) })
}

// Service is one meter instance.
type Service struct {
	sh     *kit.Shell
	window uint64
	mu     sync.Mutex
	cache  map[string]*suiteState
	order  []string
	// reported remembers, for suites whose state was dropped once
	// reported, the last stream sequence that report folded: a delivery at
	// or before it is already in the report.
	reported map[string]uint64
}

// maxReported bounds the reported marks kept (a few bytes each).
const maxReported = 1 << 16

// suiteState is a suite's count of its settled attempts up to a stream
// sequence (the facts of its runs in flight and a few bytes per planned
// attempt) and the report's fold of the same facts (measure.Log: a
// compact record a run, about 0.9 KB, never a run's facts), from which
// the report is built when the count says complete, without reading the
// suite back.
type suiteState struct {
	mu    sync.Mutex
	suite string
	count *measure.Counter
	// log folds every fact the count has counted, through last: what
	// measure.Build reads. Reading the whole suite again at the end cost
	// its every fact decoded a second time, the peak of a large suite's
	// memory (docs/benchmarks.md#the-report-built-from-the-meters-fold).
	log  *measure.Log
	last uint64
	// submission is the ID of the suite.submitted the roster comes from,
	// which its run.requested facts answer (causation).
	submission string
	// plan is what a run.requested says, decoded from the suite's blobs
	// once; nil until the suite first requests.
	plan *requestPlan
	// next is the first planned attempt this instance has seen committed
	// with every one before it; the count, read from the log, may lag
	// behind the requests this instance just made.
	next uint64
	// stopping is the suite's early-stopping rule (nil: none), read from
	// its spec once stoppingRead; stopSeen the grade changes the last
	// decision saw.
	stopping     *measure.Stopping
	stoppingRead bool
	stopSeen     uint64
}

// New returns a meter instance on b, configured by the kit's shared
// options (it keeps a suite cache, no run or policy cache) and its own
// (WithRequestWindow). Start it with Run.
func New(b *bus.Bus, opts ...kit.Option) (*Service, error) {
	cfg := config{window: measure.DefaultWindow}
	sh, err := kit.New(b, spec, &cfg, opts...)
	if err != nil {
		return nil, err
	}
	return &Service{sh: sh, window: cfg.window, cache: map[string]*suiteState{}, reported: map[string]uint64{}}, nil
}

// Run consumes until ctx is done.
func (s *Service) Run(ctx context.Context) error { return s.sh.Run(ctx, s.Handle) }

// Handle requests the first window of a submitted suite, or settles the
// suite a run.ended or grade.verdict belongs to, requesting as many more
// attempts as the runs ended let it.
func (s *Service) Handle(ctx context.Context, d bus.Delivery) error {
	switch b := d.Fact.Body.(type) {
	case events.SuiteSubmitted:
		if err := checkSize(d.Fact.Suite, b); err != nil {
			return err
		}
	case events.RunEnded, events.GradeVerdict, events.SuiteControlled:
		if s.alreadyReported(d.Fact.Suite, d.Seq) {
			return nil // a backlog message the suite's report already holds
		}
	default:
		return bus.Permanent(fmt.Errorf("meter: delivered %s", d.Fact.Kind()))
	}
	return s.settle(ctx, d.Fact.Suite, d.Seq)
}

// Expand requests a submitted suite's attempts as far as its window
// allows now, each under its deterministic run ID and message ID, with
// the attempt's agent identity and the case's budget: what a delivery of
// its suite.submitted does. Expanding again requests nothing twice.
func (s *Service) Expand(ctx context.Context, submitted events.Fact, sub events.SuiteSubmitted) error {
	if err := checkSize(submitted.Suite, sub); err != nil {
		return err
	}
	return s.settle(ctx, submitted.Suite, 0)
}

// checkSize refuses a suite over the bounds before a single run is
// requested: the meter never builds a roster it cannot afford.
func checkSize(suite string, sub events.SuiteSubmitted) error {
	if n := measure.Size(sub); n > suites.MaxRuns {
		// Whoever submitted it did not check; no retry makes it fit.
		return bus.Permanent(fmt.Errorf("meter: suite %s: %d cases × %d treatments × %d trials = %d runs; a suite has at most %d",
			suite, len(sub.Cases), len(sub.Treatments), sub.Trials, n, suites.MaxRuns))
	}
	return nil
}

// requestPlan is what the run.requested of a suite's attempts say, by case
// and treatment: their decoded cases and treatments, digests, and the
// agent identity of each pair (made when first needed). It costs memory
// in the suite's cases and treatments, not in its runs.
type requestPlan struct {
	kases   map[string]*cases.Case
	treats  map[string]*cases.Treatment
	digests map[string]events.Digest // "c/<id>", "t/<id>"
	ids     map[[2]string]identity
}

// identity is one case × treatment pair's agent identity.
type identity struct {
	id    events.Digest
	comps []events.Component
}

// planOf decodes the suite's cases and treatments from their blobs.
func (s *Service) planOf(ctx context.Context, sub *events.SuiteSubmitted) (*requestPlan, error) {
	p := &requestPlan{kases: map[string]*cases.Case{}, treats: map[string]*cases.Treatment{},
		digests: map[string]events.Digest{}, ids: map[[2]string]identity{}}
	if err := decodeRefs(ctx, s, "case", sub.Cases, cases.DecodeCase, p.kases, "c/", p.digests); err != nil {
		return nil, err
	}
	if err := decodeRefs(ctx, s, "treatment", sub.Treatments, cases.DecodeTreatment, p.treats, "t/", p.digests); err != nil {
		return nil, err
	}
	return p, nil
}

// decodeRefs decodes what refs name (cases or treatments, what says),
// each from its blob, into into by ID, and records each one's digest in
// digests under prefix+ID. One that does not decode never will: it is a
// permanent error.
func decodeRefs[T any](ctx context.Context, s *Service, what string, refs []events.Ref, decode func([]byte) (T, error),
	into map[string]T, prefix string, digests map[string]events.Digest) error {
	for _, r := range refs {
		data, err := s.blob(ctx, what, r.Digest)
		if err != nil {
			return err
		}
		v, err := decode(data)
		if err != nil {
			return bus.Permanent(fmt.Errorf("meter: %s %s (%s): %w", what, r.ID, r.Digest, err))
		}
		into[r.ID], digests[prefix+r.ID] = v, r.Digest
	}
	return nil
}

// request is the run.requested of one planned attempt.
func (p *requestPlan) request(m measure.Member) (events.RunRequested, error) {
	c, t := p.kases[m.Case], p.treats[m.Treatment]
	idt, ok := p.ids[[2]string{m.Case, m.Treatment}]
	if !ok {
		id, comps, err := suites.AgentIdentity(c, t)
		if err != nil {
			return events.RunRequested{}, bus.Permanent(fmt.Errorf("meter: %w", err))
		}
		idt = identity{id, comps}
		p.ids[[2]string{m.Case, m.Treatment}] = idt
	}
	return events.RunRequested{Case: m.Case, CaseDigest: p.digests["c/"+m.Case], Treatment: m.Treatment,
		TreatmentDigest: p.digests["t/"+m.Treatment], Trial: m.Trial, Budget: suites.Budget(c), Identity: idt.id,
		Components: idt.comps}, nil
}

// request commits the run.requested of the suite's planned attempts its
// window lets it request now (measure.Counter.ToRequest), in roster
// order, each once. The window is counted from the facts the state has
// folded, which never run ahead of the log, so the log never holds more
// than the window requested and not ended.
//
// The requests are pipelined (pipeline.go): each is appended on the
// condition that its run is still empty, under its deterministic message
// ID, without waiting for the one before. An attempt whose run already
// holds a fact (a redelivery, another meter instance, a meter that died
// mid-window, an append whose answer was lost) fails that condition and
// is committed again the ordinary way (Commit), which finds its request
// and passes it over.
func (s *Service) request(ctx context.Context, st *suiteState) error {
	if !st.count.Control().MayRequest() {
		// Paused, drained or cancelled (suite.controlled): no further
		// window. A resume is delivered here too and requests again.
		return nil
	}
	sub := st.count.Submitted()
	from, to := st.count.ToRequest(s.window)
	from = max(from, st.next)
	if from >= to {
		return nil
	}
	if st.plan == nil {
		p, err := s.planOf(ctx, sub)
		if err != nil {
			return err
		}
		st.plan = p
	}
	p := newPipeline(s, st)
	for i := from; i < to; i++ {
		if st.count.IsRequested(i) {
			if err := p.known(ctx, i); err != nil {
				_ = p.drain(ctx) // the answers still out, taken; err is the first failure
				return err
			}
			continue
		}
		m := st.count.Member(i)
		body, err := st.plan.request(m)
		if err != nil {
			_ = p.drain(ctx) // what was sent is taken first; st.next stays before m
			return err
		}
		if err := p.send(ctx, i, m, body); err != nil {
			_ = p.drain(ctx)
			return err
		}
	}
	if err := p.drain(ctx); err != nil {
		return err
	}
	if from == 0 {
		s.sh.Log.Info("suite submitted", "suite", st.suite, "requested", p.requested, "window", s.window,
			"planned", measure.Size(*sub), "cases", len(sub.Cases), "treatments", len(sub.Treatments), "trials", sub.Trials)
	}
	return nil
}

// commitRequest commits one attempt's run.requested the ordinary way:
// load its run and append the request unless the run holds it.
func (s *Service) commitRequest(ctx context.Context, st *suiteState, m measure.Member, body events.RunRequested) (bool, error) {
	recs, err := s.sh.Bus.Commit(ctx, nil, st.suite, m.Run, func(log bus.RunLog) ([]bus.Pending, error) {
		if _, ok := log.Requested(); ok {
			return nil, nil
		}
		f, err := s.requestFact(st, m, log.NextPosition(), body)
		return []bus.Pending{{Fact: f, MsgID: measure.RequestMsgID(m.Run)}}, err
	})
	if err != nil {
		return false, fmt.Errorf("meter: request %s/%s: %w", st.suite, m.Run, err)
	}
	return len(recs) > 0 && !recs[0].Duplicate, nil
}

// requestFact is the run.requested fact of an attempt at position pos
// of its run.
func (s *Service) requestFact(st *suiteState, m measure.Member, pos uint64, body events.RunRequested) (events.Fact, error) {
	return s.sh.Fact(events.Meta{Suite: st.suite, Run: m.Run, TaskGeneration: 1, Position: pos, Causation: st.submission}, body)
}

func (s *Service) blob(ctx context.Context, what string, d events.Digest) ([]byte, error) {
	data, err := s.sh.Bus.Blobs().Get(ctx, d)
	if err != nil {
		return nil, fmt.Errorf("meter: %s blob: %w", what, err)
	}
	return data, nil
}

// settle brings a suite's report up to date, through at least the stream
// sequence of the fact that asked for it, and, when every attempt is
// settled, stores it and appends suite.reported (once per distinct report).
func (s *Service) settle(ctx context.Context, suite string, through uint64) error {
	st := s.state(suite)
	st.mu.Lock()
	for st.log == nil {
		// Its fold was let go when its report was built: the report was
		// stored (the state is dropped) or failed to be (it is forgotten
		// here); either way a fact not in a report stored is folded
		// again from the stream, as after a drop.
		st.mu.Unlock()
		s.forget(suite, st)
		if s.alreadyReported(suite, through) {
			return nil
		}
		st = s.state(suite)
		st.mu.Lock()
	}
	defer st.mu.Unlock()
	if err := s.refresh(ctx, st, through); err != nil {
		return err
	}
	if st.count.Submitted() == nil {
		return nil // runs of a suite the meter did not plan
	}
	if measure.Size(*st.count.Submitted()) <= suites.MaxRuns {
		// (One past the bounds was refused when it was delivered.)
		if err := s.request(ctx, st); err != nil {
			return err
		}
	}
	if err := s.stopEarly(ctx, suite, st); err != nil {
		return err
	}
	if !st.count.Complete() {
		return nil
	}
	// Complete: the report is built from the fold of the facts the count
	// has counted, through the last one (once per report, not per fact).
	r := measure.Build(st.log)
	if !r.Complete {
		// The count and the report disagree: report nothing rather than
		// a suite that is not complete.
		s.sh.Log.Error("the count says the suite is complete, its report does not", "suite", suite, "through", st.last,
			"tally", fmt.Sprintf("%+v", st.count.Tally()))
		return nil
	}
	// The report holds what it reads of the fold: the fold (~1 KB a run)
	// is let go before the report is encoded twice and stored, the
	// suite's end, where the process peaks. A report that fails to store
	// is built again from a fold read back from the stream (settle).
	st.log = nil
	digest, err := s.storeReport(ctx, r)
	if err != nil {
		s.forget(suite, st)
		return err
	}
	body := r.Reported(digest)
	body.Through = st.last
	recs, err := s.sh.Bus.Commit(ctx, nil, suite, events.SuiteScope, func(log bus.RunLog) ([]bus.Pending, error) {
		for _, rec := range log.Records {
			if sr, ok := rec.Fact.Body.(events.SuiteReported); ok && sr.ReportDigest == digest {
				return nil, nil
			}
		}
		f, err := s.sh.Fact(events.Meta{Suite: suite, Run: events.SuiteScope, Position: log.NextPosition()}, body)
		return []bus.Pending{{Fact: f, MsgID: measure.ReportMsgID(digest)}}, err
	})
	if err != nil {
		return fmt.Errorf("meter: report %s: %w", suite, err)
	}
	if len(recs) > 0 && !recs[0].Duplicate {
		s.sh.Log.Info("suite reported", "suite", suite, "report", digest, "attempts", body.Attempts, "passed", body.Passed,
			"failed", body.Failed, "pending", body.Pending, "invalid", body.Invalid, "abstained", body.Abstained, "excluded", body.Excluded)
	}
	// A reported suite is done until something changes it (a regrade): its
	// folded state would only hold memory. A later settle folds it again
	// from the stream.
	s.drop(suite, st)
	return nil
}

// drop forgets a suite's cached state, if st is still the cached one, and
// remembers how far its report folded.
func (s *Service) drop(suite string, st *suiteState) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cache[suite] != st {
		return
	}
	if len(s.reported) >= maxReported {
		clear(s.reported) // marks only save work: losing them is safe
	}
	s.reported[suite] = st.last
	delete(s.cache, suite)
	if i := slices.Index(s.order, suite); i >= 0 {
		s.order = slices.Delete(s.order, i, i+1)
	}
}

// forget drops a suite's cached state, if st is still the cached one,
// without marking anything reported.
func (s *Service) forget(suite string, st *suiteState) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cache[suite] != st {
		return
	}
	delete(s.cache, suite)
	if i := slices.Index(s.order, suite); i >= 0 {
		s.order = slices.Delete(s.order, i, i+1)
	}
}

// alreadyReported says whether the fact at stream sequence seq is folded
// into a report of a suite whose state was dropped.
func (s *Service) alreadyReported(suite string, seq uint64) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, cached := s.cache[suite]; cached {
		return false
	}
	last, ok := s.reported[suite]
	return ok && seq <= last
}

// state returns the cached state of a suite, making room for it.
func (s *Service) state(suite string) *suiteState {
	s.mu.Lock()
	defer s.mu.Unlock()
	if st, ok := s.cache[suite]; ok {
		return st
	}
	st := &suiteState{suite: suite, count: measure.NewCounter(suite), log: measure.NewLog(suite)}
	s.cache[suite] = st
	s.order = append(s.order, suite)
	for len(s.order) > s.sh.SuiteCache {
		delete(s.cache, s.order[0])
		s.order = s.order[1:]
	}
	return st
}

// refresh counts the suite's facts committed since the state's last
// sequence, through at least the sequence through. A fact of a run the
// count let go of has the run's earlier facts read back.
//
// A short range (the facts since the suite's last delivery, as when the
// meter keeps up) is read by direct gets of its every sequence: a read
// through a consumer costs, in the server, as many subjects as the
// stream's newest block holds, and a suite's every run.ended and
// grade.verdict asks for one (docs/benchmarks.md#suite-size). A longer
// one, or one with a sequence missing, is read through a consumer.
func (s *Service) refresh(ctx context.Context, st *suiteState, through uint64) error {
	apply := func(raw bus.Raw) error {
		f, err := raw.Fact()
		if err != nil {
			if errors.Is(err, events.ErrSubjectMismatch) {
				s.sh.Log.Warn("left a forged fact out of the report", "suite", st.suite, "seq", raw.Seq, "subject", raw.Subject, "err", err)
			}
			st.last = raw.Seq // the consumers dead-letter it; it holds no fact of the suite
			return nil
		}
		if err := st.count.Apply(f, EarlierFacts(ctx, s.sh.Bus, f.Suite, raw.Seq)); err != nil {
			return err
		}
		// Folded once, as counted: a fact the count failed on is applied
		// again on the retry, and only then folded.
		st.log.Apply(f)
		if _, ok := f.Body.(events.SuiteSubmitted); ok && st.submission == "" && f.Suite == st.suite {
			st.submission = f.ID.String() // the first submission fixes the roster
		}
		// What was counted before a failed read stays counted: the retry
		// goes on from there instead of counting it twice.
		st.last = raw.Seq
		return nil
	}
	if through > 0 && through <= st.last {
		return nil // counted already
	}
	if through > 0 && through-st.last <= maxDirectRange {
		_, err := s.sh.Bus.ReadRange(ctx, events.FactPrefix+"."+st.suite+".", st.last+1, through, apply)
		if err == nil {
			st.last = through // every sequence up to it was looked at
			return nil
		}
		if !errors.Is(err, bus.ErrRangeGap) {
			return fmt.Errorf("meter: read suite %s: %w", st.suite, err)
		}
	}
	_, err := s.sh.Bus.Read(ctx, bus.ReadOptions{Filter: events.SuiteFilter(st.suite), FromSeq: st.last + 1, Through: through}, apply)
	if err != nil {
		return fmt.Errorf("meter: read suite %s: %w", st.suite, err)
	}
	return nil
}

// maxDirectRange bounds the range refresh reads by direct gets: messages
// of other suites in it are read too, and skipped.
const maxDirectRange = 256

// EarlierFacts reads back from b a run's facts committed before stream
// sequence seq: what a measure.Counter asks for when it needs a run it let
// go of. The meter and the CLI's progress count with it.
func EarlierFacts(ctx context.Context, b *bus.Bus, suite string, seq uint64) measure.Earlier {
	return func(run string) ([]events.Fact, error) {
		log, err := b.LoadRun(ctx, suite, run)
		if err != nil {
			return nil, err
		}
		var out []events.Fact
		for _, r := range log.Records {
			if r.Seq < seq {
				out = append(out, r.Fact)
			}
		}
		return out, nil
	}
}

// readSuite folds the suite's facts from stream sequence from on into l and
// returns the sequence of the last one read (0 when there was none). A
// through of 0 reads up to the newest fact the stream leader holds; a
// delivered fact's sequence saves asking it, since that fact is known to be
// committed and any later one brings its own delivery. A message that
// holds no fact of its subject (undecodable, or forged under another
// kind's, suite's or run's subject) is folded into nothing and handed to
// skip.
func readSuite(ctx context.Context, b *bus.Bus, l *measure.Log, from, through uint64, skip func(bus.BadRecord)) (uint64, error) {
	last, err := b.Read(ctx, bus.ReadOptions{Filter: events.SuiteFilter(l.Suite), FromSeq: from, Through: through}, func(raw bus.Raw) error {
		f, err := raw.Fact()
		if err != nil {
			skip(bus.BadRecord{Seq: raw.Seq, Subject: raw.Subject, Err: err})
			return nil // the consumers dead-letter it; it holds no fact of the suite
		}
		l.Apply(f)
		return nil
	})
	if err != nil {
		return last, fmt.Errorf("meter: read suite %s: %w", l.Suite, err)
	}
	return last, nil
}

// Report builds a suite's report from the log as it is now: what the CLI
// prints, and what anyone can rebuild with the "suites" projection.
func Report(ctx context.Context, b *bus.Bus, suite string) (measure.Report, error) {
	r, _, err := ReportWithSkipped(ctx, b, suite)
	return r, err
}

// ReportWithSkipped is Report that also returns, in stream order, the
// messages of the suite's subjects it left out because they hold no fact
// of their subject: undecodable, or forged (errors.Is
// events.ErrSubjectMismatch). A reader that shows the report names them.
func ReportWithSkipped(ctx context.Context, b *bus.Bus, suite string) (measure.Report, []bus.BadRecord, error) {
	if err := events.ValidateToken("suite", suite); err != nil {
		return measure.Report{}, nil, err
	}
	l := measure.NewLog(suite)
	var skipped []bus.BadRecord
	if _, err := readSuite(ctx, b, l, 0, 0, func(bad bus.BadRecord) { skipped = append(skipped, bad) }); err != nil {
		return measure.Report{}, skipped, err
	}
	if l.Submitted == nil {
		return measure.Report{}, skipped, &NotSubmittedError{Suite: suite}
	}
	return measure.Build(l), skipped, nil
}
