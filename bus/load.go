package bus

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/factline/factline/events"
	"github.com/factline/factline/internal/sleep"
)

// RunLog is one run's committed facts in stream order.
type RunLog struct {
	Suite, Run string
	Records    []Record
	// Bad lists messages on the run's subjects that do not decode as
	// facts, or whose fact is not the one their subject names (a forgery:
	// the error matches events.ErrSubjectMismatch). They count for LastSeq
	// (the stream holds them) but carry no fact; consumers dead-letter them
	// when they are delivered.
	Bad []BadRecord
	// LastSeq is the stream sequence of the run's newest message, 0 if none:
	// the value to pass to Append as expectLast.
	LastSeq uint64
	// facts is Records' facts, kept by a RunLogs as its log grows so that
	// Facts need not copy the whole log on every call (a runner reads it
	// at every step); nil or short elsewhere.
	facts []events.Fact
}

// BadRecord is a stored message that holds no fact of its subject: it
// failed to decode, or its fact names another kind, suite or run.
type BadRecord struct {
	Seq     uint64
	Subject string
	Err     error
}

// Facts returns the run's facts in order. The slice may be shared with
// the run cache: append to it freely, never write its elements.
func (l RunLog) Facts() []events.Fact {
	if n := len(l.Records); len(l.facts) == n && (n == 0 || l.facts[n-1].ID == l.Records[n-1].Fact.ID) {
		return slices.Clip(l.facts)
	}
	out := make([]events.Fact, len(l.Records))
	for i, r := range l.Records {
		out[i] = r.Fact
	}
	return out
}

// syncFacts brings l.facts up to l.Records, appending the facts of the
// records added since it was last brought up to date, and starting again
// if the records are not an extension of what it holds. The run cache calls
// it as its log only ever grows.
func (l *RunLog) syncFacts() {
	k := len(l.facts)
	if k > len(l.Records) || k > 0 && l.facts[k-1].ID != l.Records[k-1].Fact.ID {
		l.facts, k = nil, 0
	}
	for _, r := range l.Records[k:] {
		l.facts = append(l.facts, r.Fact)
	}
}

// ByMsgID finds a committed fact by the deduplication ID its writer gave
// it: how a writer recognises, after a conflict or a redelivery, that its
// fact is already in. It matches the hashed IDs stored today and the
// writer's IDs older stores hold (Record.HasMsgID).
func (l RunLog) ByMsgID(id string) (Record, bool) {
	key := scopeMsgID(l.Suite, id) // once, not a hash per record
	for i := len(l.Records) - 1; i >= 0; i-- {
		if m := l.Records[i].MsgID; m == key || m == id {
			return l.Records[i], true
		}
	}
	return Record{}, false
}

// Ended reports whether the run holds its run.ended: after it, only
// graders append to the run.
func (l RunLog) Ended() bool {
	for i := len(l.Records) - 1; i >= 0; i-- {
		if l.Records[i].Fact.Kind() == events.KindRunEnded {
			return true
		}
	}
	return false
}

// Requested returns the run's run.requested, which names the case,
// treatment and trial it runs (for a child run, the request its
// run.delegated carries); false when the log holds none (a run whose
// request was never committed, or a log read from its middle).
func (l RunLog) Requested() (events.RunRequested, bool) {
	for _, r := range l.Records {
		switch b := r.Fact.Body.(type) {
		case events.RunRequested:
			return b, true
		case events.RunDelegated:
			return b.Request, true
		}
	}
	return events.RunRequested{}, false
}

// NextPosition is the position the run's next fact takes.
func (l RunLog) NextPosition() uint64 {
	if n := len(l.Records); n > 0 {
		return l.Records[n-1].Fact.Position + 1
	}
	return 1
}

// Expect returns the expectation to append after this log (see Append).
func (l RunLog) Expect() Expect {
	seqs := make([]uint64, 0, len(l.Records)+len(l.Bad))
	for _, r := range l.Records {
		seqs = append(seqs, r.Seq)
	}
	for _, r := range l.Bad {
		seqs = append(seqs, r.Seq)
	}
	slices.Sort(seqs)
	slices.Reverse(seqs)
	if len(seqs) == 0 {
		return Expect{}
	}
	return Expect{Last: seqs[0], prev: seqs[:min(len(seqs), prevDepth)]}
}

// LoadRun reads every fact of one run, in order. Its cost follows the size
// of the run, not of the stream: it finds the run's last message and follows
// the HeaderPrev links back, fetching by sequence many at a time. When the
// links cannot prove the run complete (a message written without them, a
// deleted message) it falls back to a filtered scan, which is always right
// but slower on a big stream.
//
// On replicated streams the log it returns holds every fact acknowledged
// before it was called: any replica answers a direct get, and one that
// lags the leader answers with an older end of the run, so the run's
// newest sequence is asked of the stream leader first and a log that stops
// short of it is fetched again after a pause (LoadThrough's), failing with
// ErrBehind past them.
func (b *Bus) LoadRun(ctx context.Context, suite, run string) (RunLog, error) {
	log := RunLog{Suite: suite, Run: run}
	if b.cfg.Replicas <= 1 {
		// One replica is the leader: what it answers is all there is.
		if err := b.extendRun(ctx, &log); err != nil {
			return RunLog{}, err
		}
		return log, nil
	}
	head, err := b.leaderLastSeq(ctx, FactsStream, events.RunFilter(suite, run))
	if err != nil {
		return RunLog{}, fmt.Errorf("load %s/%s: %w", suite, run, err)
	}
	if err := b.extendThrough(ctx, &log, head); err != nil {
		return RunLog{}, err
	}
	return log, nil
}

// extendThrough extends log until it holds the run's message at sequence
// head (committed: the leader has it). A replica that lags answers with a
// prefix of the run, which the next round extends; past behindWaits it
// fails with ErrBehind.
func (b *Bus) extendThrough(ctx context.Context, log *RunLog, head uint64) error {
	for i := 0; ; i++ {
		if err := b.extendRun(ctx, log); err != nil {
			return err
		}
		if log.LastSeq >= head {
			return nil
		}
		if i == len(behindWaits) {
			return fmt.Errorf("load %s/%s through sequence %d: have %d: %w", log.Suite, log.Run, head, log.LastSeq, ErrBehind)
		}
		if err := sleep.For(ctx, behindWaits[i]*time.Millisecond); err != nil {
			return err
		}
	}
}

// extendRun appends to log the run's messages after log.LastSeq.
func (b *Bus) extendRun(ctx context.Context, log *RunLog) error {
	ok, err := b.extendByLinks(ctx, log, nil, nil)
	if err != nil || ok {
		return err
	}
	filter := events.RunFilter(log.Suite, log.Run)
	b.log.Debug("run links incomplete; scanning", "filter", filter)
	return b.directBatch(ctx, FactsStream, filter, log.LastSeq+1, func(m *nats.Msg, _ uint64) { addMessage(log, m) })
}

// extendByLinks extends log by following run links back from the run's
// newest message, or from newest when it is given (a message of the run in
// hand, in the form a direct get returns; decoded, when given, is its
// record, so that it is not decoded again). It reports false, leaving log
// as it was, when the links cannot prove that nothing was missed.
func (b *Bus) extendByLinks(ctx context.Context, log *RunLog, newest *nats.Msg, decoded *Record) (bool, error) {
	msgs, ok, err := b.fetchByLinks(ctx, events.RunFilter(log.Suite, log.Run), log.LastSeq, newest)
	if err != nil || !ok {
		return false, err
	}
	next := *log
	for _, m := range msgs {
		if decoded != nil && m == newest {
			// Delivered, and so decoded already.
			next.Records = append(next.Records, *decoded)
			next.LastSeq = decoded.Seq
			continue
		}
		addMessage(&next, m)
	}
	// The links only say which messages their writers knew of. Positions
	// prove nothing was skipped: every fact takes the next one, so the
	// new facts must continue the known ones without a gap.
	if !contiguous(log, next) {
		return false, nil
	}
	*log = next
	return true, nil
}

// contiguous reports whether next extends log by facts whose positions
// follow on without a gap, and holds no undecodable message (whose position
// cannot be known).
func contiguous(log *RunLog, next RunLog) bool {
	if len(next.Bad) != len(log.Bad) {
		return false
	}
	pos := log.NextPosition()
	for _, r := range next.Records[len(log.Records):] {
		if r.Fact.Position != pos {
			return false
		}
		pos++
	}
	return true
}

// addMessage decodes one stored message of the run into log.
func addMessage(log *RunLog, m *nats.Msg) {
	seq, _ := strconv.ParseUint(m.Header.Get(jetstream.SequenceHeader), 10, 64)
	log.LastSeq = seq
	subj := m.Header.Get(jetstream.SubjectHeader)
	f, err := events.DecodeStored(subj, m.Data)
	if err != nil {
		log.Bad = append(log.Bad, BadRecord{Seq: seq, Subject: subj, Err: err})
		return
	}
	log.Records = append(log.Records, Record{Fact: f, Seq: seq, Subject: subj, MsgID: unscopeMsgID(f.Suite, m.Header.Get(jetstream.MsgIDHeader))})
}

// fetchByLinks fetches the run's messages after stop by following HeaderPrev
// links from the run's newest message (from last, when given, without
// asking the server for the newest). ok is false when the links do not
// prove that nothing was missed; the caller then scans.
func (b *Bus) fetchByLinks(ctx context.Context, filter string, stop uint64, last *nats.Msg) (msgs []*nats.Msg, ok bool, err error) {
	g, err := b.newGetter()
	if err != nil {
		return nil, false, err
	}
	defer g.close()
	if last == nil {
		var found bool
		last, found, err = g.get(ctx, directGetRequest{LastFor: filter})
		if err != nil || !found {
			// Nothing at all: an empty run, unless we knew of messages before.
			return nil, err == nil && stop == 0, err
		}
	}
	got := map[uint64]*nats.Msg{}
	links := map[uint64][]uint64{}
	asked := map[uint64]bool{}
	inflight := 0
	// add records a message and asks at once for the linked messages not
	// asked for yet, oldest first: the oldest answer reveals the links
	// furthest back, so the next requests leave while the rest of this
	// batch is still arriving: the run is loaded in about len/prevDepth
	// overlapping round trips, not one after another.
	add := func(seq uint64, m *nats.Msg) (bool, error) {
		prev, okp := parsePrev(m.Header.Get(HeaderPrev), seq)
		if !okp {
			return false, nil
		}
		got[seq], links[seq] = m, prev
		for i := len(prev) - 1; i >= 0; i-- {
			p := prev[i]
			if p <= stop || asked[p] {
				continue
			}
			asked[p] = true
			if err := g.send(directGetRequest{Seq: p}); err != nil {
				return false, err
			}
			inflight++
		}
		return true, nil
	}
	lastSeq := seqOf(last)
	if lastSeq <= stop {
		return nil, lastSeq == stop, nil
	}
	asked[lastSeq] = true
	if ok, err := add(lastSeq, last); !ok || err != nil {
		return nil, false, err
	}
	for inflight > 0 {
		m, found, err := g.receive(ctx)
		if err != nil {
			return nil, false, err
		}
		inflight--
		if !found {
			return nil, false, nil // a linked message is gone: scan
		}
		seq := seqOf(m)
		if !asked[seq] || got[seq] != nil {
			return nil, false, fmt.Errorf("direct get: unexpected answer for sequence %d", seq)
		}
		if ok, err := add(seq, m); !ok || err != nil {
			return nil, false, err
		}
	}
	seqs := slices.Sorted(maps.Keys(got))
	// Each message must link to the one before it, and the oldest to stop
	// (or to nothing, for a run's first message).
	for i, s := range seqs {
		want := stop
		if i > 0 {
			want = seqs[i-1]
		}
		var prev0 uint64
		if p := links[s]; len(p) > 0 {
			prev0 = p[0]
		}
		if prev0 != want {
			return nil, false, nil
		}
	}
	out := make([]*nats.Msg, len(seqs))
	for i, s := range seqs {
		out[i] = got[s]
	}
	return out, true, nil
}

func seqOf(m *nats.Msg) uint64 {
	s, _ := strconv.ParseUint(m.Header.Get(jetstream.SequenceHeader), 10, 64)
	return s
}

// getter issues direct gets on FACTS and reads their answers from its own
// box of the bus's reply multiplexer.
type getter struct {
	nc    *nats.Conn
	mux   *replyMux
	inbox string
	token string
	box   *replyBox
	api   string
}

func (b *Bus) newGetter() (*getter, error) {
	inbox, token, box, err := b.replies.open()
	if err != nil {
		return nil, fmt.Errorf("direct get: subscribe: %w", err)
	}
	return &getter{nc: b.nc, mux: b.replies, inbox: inbox, token: token, box: box, api: "$JS.API.DIRECT.GET." + FactsStream}, nil
}

func (g *getter) close() { g.mux.close(g.token) }

func (g *getter) send(req directGetRequest) error {
	data, _ := json.Marshal(req)
	if err := g.nc.PublishRequest(g.api, g.inbox, data); err != nil {
		return fmt.Errorf("direct get: %w", err)
	}
	return nil
}

// replyTimeout bounds the wait for one direct-get answer: a request lost
// while the connection moves to another server must fail (and be retried
// by the caller) rather than wait forever.
const replyTimeout = 10 * time.Second

// receive reads one answer; found is false for "no such message".
func (g *getter) receive(ctx context.Context) (*nats.Msg, bool, error) {
	ctx, cancel := context.WithTimeout(ctx, replyTimeout)
	defer cancel()
	m, err := g.box.next(ctx)
	if err != nil {
		return nil, false, fmt.Errorf("direct get: %w", err)
	}
	switch st := m.Header.Get("Status"); st {
	case "":
		return m, true, nil
	case "404":
		return nil, false, nil
	default:
		return nil, false, directGetStatus(m)
	}
}

// DirectGetError is a direct get the server answered with a status other
// than a message or "none": a 503 (no leader for a moment, a stream
// catching up) is the bus failing, not the work (Transient).
type DirectGetError struct {
	Status, Description string
}

func (e *DirectGetError) Error() string {
	return fmt.Sprintf("direct get: status %s %s", e.Status, e.Description)
}

// directGetStatus is the error of a direct get's status reply.
func directGetStatus(m *nats.Msg) error {
	return &DirectGetError{Status: m.Header.Get("Status"), Description: m.Header.Get("Description")}
}

func (g *getter) get(ctx context.Context, req directGetRequest) (*nats.Msg, bool, error) {
	if err := g.send(req); err != nil {
		return nil, false, err
	}
	return g.receive(ctx)
}

// directBatchSize bounds one batched direct get; the loop asks again while
// the server reports more pending.
const directBatchSize = 512

type directGetRequest struct {
	Seq     uint64 `json:"seq,omitempty"`
	LastFor string `json:"last_by_subj,omitempty"`
	NextFor string `json:"next_by_subj,omitempty"`
	Batch   int    `json:"batch,omitempty"`
}

// directBatch streams the messages matching filter from sequence from on,
// calling fn for each in order.
func (b *Bus) directBatch(ctx context.Context, stream, filter string, from uint64, fn func(*nats.Msg, uint64)) error {
	inbox := b.nc.NewInbox()
	sub, err := b.nc.SubscribeSync(inbox)
	if err != nil {
		return fmt.Errorf("load %s: subscribe: %w", filter, err)
	}
	defer sub.Unsubscribe()
	api := "$JS.API.DIRECT.GET." + stream
	for {
		req, _ := json.Marshal(directGetRequest{Seq: from, NextFor: filter, Batch: directBatchSize})
		if err := b.nc.PublishRequest(api, inbox, req); err != nil {
			return fmt.Errorf("load %s: request: %w", filter, err)
		}
		more, last, err := readBatch(ctx, sub, fn)
		if err != nil {
			return fmt.Errorf("load %s from %d: %w", filter, from, err)
		}
		if !more {
			return nil
		}
		from = last + 1
	}
}

// readBatch reads one batched direct-get answer. It reports whether the
// server has more matching messages and the last sequence it delivered.
func readBatch(ctx context.Context, sub *nats.Subscription, fn func(*nats.Msg, uint64)) (more bool, last uint64, err error) {
	for {
		rctx, cancel := context.WithTimeout(ctx, replyTimeout)
		m, err := sub.NextMsgWithContext(rctx)
		cancel()
		if err != nil {
			return false, last, err
		}
		switch status := m.Header.Get("Status"); status {
		case "":
		case "404": // nothing (more) matches
			return false, last, nil
		case "204": // end of batch
			np, _ := strconv.ParseUint(m.Header.Get("Nats-Num-Pending"), 10, 64)
			return np > 0 && last > 0, last, nil
		default:
			return false, last, directGetStatus(m)
		}
		seq, err := strconv.ParseUint(m.Header.Get(jetstream.SequenceHeader), 10, 64)
		if err != nil {
			return false, last, fmt.Errorf("direct get: bad %s header %q", jetstream.SequenceHeader, m.Header.Get(jetstream.SequenceHeader))
		}
		last = seq
		fn(m, seq)
	}
}

// ErrAmbiguousRun is returned (wrapped in an *AmbiguousRunError) by
// FindSuite when the run's ID names runs of several suites.
var ErrAmbiguousRun = errors.New("the run ID names runs of several suites")

// AmbiguousRunError says which suites hold a run of the ID a command named
// alone: run IDs are unique within a suite only (a case run again in
// another suite under the same treatment gets the same ID), so a signal
// sent by ID alone could reach the wrong suite's run.
type AmbiguousRunError struct {
	Run    string
	Suites []string
}

func (e *AmbiguousRunError) Error() string {
	return fmt.Sprintf("run %q is a run of %d suites (%s): name the suite (--suite %s)",
		e.Run, len(e.Suites), strings.Join(e.Suites, ", "), e.Suites[len(e.Suites)-1])
}

// Unwrap makes errors.Is(err, ErrAmbiguousRun) hold.
func (e *AmbiguousRunError) Unwrap() error { return ErrAmbiguousRun }

// FindSuite returns the suite a run belongs to, for commands that name a
// run alone: the one suite whose log starts a run of that ID. A run of the
// ID in more than one suite is an *AmbiguousRunError naming them; a log
// that holds facts of the run but none that starts it (a partial import)
// is answered by the run's newest fact.
func (b *Bus) FindSuite(ctx context.Context, run string) (string, error) {
	suites, err := b.SuitesOfRun(ctx, run)
	if err != nil {
		return "", err
	}
	switch len(suites) {
	case 0:
	case 1:
		return suites[0], nil
	default:
		return "", &AmbiguousRunError{Run: run, Suites: suites}
	}
	g, err := b.newGetter()
	if err != nil {
		return "", err
	}
	defer g.close()
	m, found, err := g.get(ctx, directGetRequest{LastFor: events.FactPrefix + ".*." + run + ".>"})
	if err != nil {
		return "", err
	}
	if !found {
		return "", fmt.Errorf("no run %q in the log", run)
	}
	suite, _, _, err := events.ParseFactSubject(m.Header.Get(jetstream.SubjectHeader))
	return suite, err
}

// SuitesOfRun returns the suites whose logs start a run of the ID (with
// its run.requested, or a child's run.delegated), in the order they
// started it. It reads those facts alone, one per suite, never the runs.
func (b *Bus) SuitesOfRun(ctx context.Context, run string) ([]string, error) {
	if err := events.ValidateRunID(run); err != nil {
		return nil, err
	}
	type start struct {
		seq   uint64
		suite string
	}
	var starts []start
	for _, kind := range []events.Kind{events.KindRunRequested, events.KindRunDelegated} {
		filter := events.FactPrefix + ".*." + run + "." + string(kind)
		err := b.directBatch(ctx, FactsStream, filter, 1, func(m *nats.Msg, seq uint64) {
			if suite, _, _, err := events.ParseFactSubject(m.Header.Get(jetstream.SubjectHeader)); err == nil {
				starts = append(starts, start{seq, suite})
			}
		})
		if err != nil {
			return nil, fmt.Errorf("find the suites of run %q: %w", run, err)
		}
	}
	slices.SortFunc(starts, func(a, b start) int { return cmp.Compare(a.seq, b.seq) })
	var suites []string
	for _, s := range starts {
		if !slices.Contains(suites, s.suite) {
			suites = append(suites, s.suite)
		}
	}
	return suites, nil
}
