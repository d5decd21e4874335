// Package meter is the meter stick's service shell. It consumes
// suite.submitted, expanding the roster into run.requested facts with
// deterministic run and message IDs (so a redelivered submission requests
// nothing twice), each carrying the attempt's agent identity; and it
// consumes run.ended and grade.verdict, folding the suite's facts with the
// pure core in package measure until every planned attempt is settled, when
// it stores the report as a blob and appends suite.reported. The report is
// also the "suites" projection, which anyone can rebuild from the log.
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
		events.KindFilter(events.KindGradeVerdict)},
	InstancePrefix: "meter",
	SuiteCache:     64,
}

// Service is one meter instance.
type Service struct {
	sh    *kit.Shell
	mu    sync.Mutex
	cache map[string]*suiteState
	order []string
	// reported remembers, for suites whose state was dropped once
	// reported, the last stream sequence that report folded: a delivery at
	// or before it is already in the report.
	reported map[string]uint64
}

// maxReported bounds the reported marks kept (a few bytes each).
const maxReported = 1 << 16

// suiteState is a suite's count of its settled attempts up to a stream
// sequence: the facts of its runs in flight and a few bytes per planned
// attempt, never every run's facts (the report reads them back once the
// suite is complete).
type suiteState struct {
	mu    sync.Mutex
	suite string
	count *measure.Counter
	last  uint64
	// stopping is the suite's early-stopping rule (nil: none), read from
	// its spec once stoppingRead; stopSeen the grade changes the last
	// decision saw.
	stopping     *measure.Stopping
	stoppingRead bool
	stopSeen     uint64
}

// New returns a meter instance on b, configured by the kit's shared
// options (it keeps a suite cache, no run or policy cache). Start it with
// Run.
func New(b *bus.Bus, opts ...kit.Option) (*Service, error) {
	sh, err := kit.New[struct{}](b, spec, nil, opts...)
	if err != nil {
		return nil, err
	}
	return &Service{sh: sh, cache: map[string]*suiteState{}, reported: map[string]uint64{}}, nil
}

// Run consumes until ctx is done.
func (s *Service) Run(ctx context.Context) error { return s.sh.Run(ctx, s.Handle) }

// Handle expands a submitted suite, or settles the suite a run.ended or
// grade.verdict belongs to.
func (s *Service) Handle(ctx context.Context, d bus.Delivery) error {
	switch b := d.Fact.Body.(type) {
	case events.SuiteSubmitted:
		if err := s.Expand(ctx, d.Fact, b); err != nil {
			return err
		}
	case events.RunEnded, events.GradeVerdict:
		if s.alreadyReported(d.Fact.Suite, d.Seq) {
			return nil // a backlog message the suite's report already holds
		}
	default:
		return bus.Permanent(fmt.Errorf("meter: delivered %s", d.Fact.Kind()))
	}
	return s.settle(ctx, d.Fact.Suite, d.Seq)
}

// Expand commits one run.requested per planned attempt of a submitted
// suite, each under its deterministic run ID and message ID, with the
// attempt's agent identity and the case's budget. Expanding again requests
// nothing twice.
func (s *Service) Expand(ctx context.Context, submitted events.Fact, sub events.SuiteSubmitted) error {
	suite := submitted.Suite
	if n := measure.Size(sub); n > suites.MaxRuns {
		// Whoever submitted it did not check; no retry makes it fit.
		return bus.Permanent(fmt.Errorf("meter: suite %s: %d cases × %d treatments × %d trials = %d runs; a suite has at most %d",
			suite, len(sub.Cases), len(sub.Treatments), sub.Trials, n, suites.MaxRuns))
	}
	kases := map[string]*cases.Case{}
	treats := map[string]*cases.Treatment{}
	digests := map[string]events.Digest{} // "c/<id>", "t/<id>"
	for _, r := range sub.Cases {
		data, err := s.blob(ctx, "case", r.Digest)
		if err != nil {
			return err
		}
		c, err := cases.DecodeCase(data)
		if err != nil {
			return bus.Permanent(fmt.Errorf("meter: case %s (%s): %w", r.ID, r.Digest, err))
		}
		kases[r.ID], digests["c/"+r.ID] = c, r.Digest
	}
	for _, r := range sub.Treatments {
		data, err := s.blob(ctx, "treatment", r.Digest)
		if err != nil {
			return err
		}
		t, err := cases.DecodeTreatment(data)
		if err != nil {
			return bus.Permanent(fmt.Errorf("meter: treatment %s (%s): %w", r.ID, r.Digest, err))
		}
		treats[r.ID], digests["t/"+r.ID] = t, r.Digest
	}
	requested := 0
	// The roster is streamed, and identities are kept for the case at hand
	// only (one per treatment): memory follows the suite's cases and
	// treatments, not its runs.
	type identity struct {
		id    events.Digest
		comps []events.Component
	}
	var rowCase string
	row := map[string]identity{}
	for m := range measure.Members(sub) {
		c, t := kases[m.Case], treats[m.Treatment]
		if m.Case != rowCase {
			rowCase = m.Case
			clear(row)
		}
		idt, ok := row[m.Treatment]
		if !ok {
			id, comps, err := suites.AgentIdentity(c, t)
			if err != nil {
				return bus.Permanent(fmt.Errorf("meter: %w", err))
			}
			idt = identity{id, comps}
			row[m.Treatment] = idt
		}
		id, comps := idt.id, idt.comps
		body := events.RunRequested{Case: m.Case, CaseDigest: digests["c/"+m.Case], Treatment: m.Treatment,
			TreatmentDigest: digests["t/"+m.Treatment], Trial: m.Trial, Budget: suites.Budget(c), Identity: id, Components: comps}
		recs, err := s.sh.Bus.Commit(ctx, nil, suite, m.Run, func(log bus.RunLog) ([]bus.Pending, error) {
			if _, ok := log.Requested(); ok {
				return nil, nil
			}
			f, err := s.sh.Fact(events.Meta{Suite: suite, Run: m.Run, TaskGeneration: 1, Position: log.NextPosition(),
				Causation: submitted.ID.String()}, body)
			return []bus.Pending{{Fact: f, MsgID: measure.RequestMsgID(m.Run)}}, err
		})
		if err != nil {
			return fmt.Errorf("meter: request %s/%s: %w", suite, m.Run, err)
		}
		if len(recs) > 0 && !recs[0].Duplicate {
			requested++
		}
	}
	s.sh.Log.Info("suite expanded", "suite", suite, "requested", requested, "cases", len(sub.Cases),
		"treatments", len(sub.Treatments), "trials", sub.Trials)
	return nil
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
	defer st.mu.Unlock()
	if err := s.refresh(ctx, st, through); err != nil {
		return err
	}
	if st.count.Submitted() == nil {
		return nil // runs of a suite the meter did not plan
	}
	if err := s.stopEarly(ctx, suite, st); err != nil {
		return err
	}
	if !st.count.Complete() {
		return nil
	}
	// Complete: the report reads the suite back, through the fact the
	// count last folded (once per report, not once per fact).
	l := measure.NewLog(suite)
	if _, err := readSuite(ctx, s.sh.Bus, l, 0, st.last, func(bus.BadRecord) {}); err != nil {
		return err
	}
	r := measure.Build(l)
	if !r.Complete {
		// The count and the report disagree: report nothing rather than
		// a suite that is not complete.
		s.sh.Log.Error("the count says the suite is complete, its report does not", "suite", suite, "through", st.last,
			"tally", fmt.Sprintf("%+v", st.count.Tally()))
		return nil
	}
	data, err := measure.EncodeJSON(r)
	if err != nil {
		return err
	}
	digest, err := s.sh.Bus.Blobs().Put(ctx, data)
	if err != nil {
		return fmt.Errorf("meter: store the report of %s: %w", suite, err)
	}
	body := r.Reported(digest)
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
	st := &suiteState{suite: suite, count: measure.NewCounter(suite)}
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
func (s *Service) refresh(ctx context.Context, st *suiteState, through uint64) error {
	_, err := s.sh.Bus.Read(ctx, bus.ReadOptions{Filter: events.SuiteFilter(st.suite), FromSeq: st.last + 1, Through: through}, func(raw bus.Raw) error {
		f, err := raw.Fact()
		if err != nil {
			if errors.Is(err, events.ErrSubjectMismatch) {
				s.sh.Log.Warn("left a forged fact out of the report", "suite", st.suite, "seq", raw.Seq, "subject", raw.Subject, "err", err)
			}
			st.last = raw.Seq // the consumers dead-letter it; it holds no fact of the suite
			return nil
		}
		if err := st.count.Apply(f, s.earlier(ctx, f.Suite, raw.Seq)); err != nil {
			return err
		}
		// What was counted before a failed read stays counted: the retry
		// goes on from there instead of counting it twice.
		st.last = raw.Seq
		return nil
	})
	if err != nil {
		return fmt.Errorf("meter: read suite %s: %w", st.suite, err)
	}
	return nil
}

// earlier reads back a run's facts committed before stream sequence seq.
func (s *Service) earlier(ctx context.Context, suite string, seq uint64) measure.Earlier {
	return func(run string) ([]events.Fact, error) {
		log, err := s.sh.Bus.LoadRun(ctx, suite, run)
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
		return measure.Report{}, skipped, fmt.Errorf("suite %s was never submitted: this log has no suite.submitted of it", suite)
	}
	return measure.Build(l), skipped, nil
}
