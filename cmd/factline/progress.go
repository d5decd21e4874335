package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/factline/factline/bus"
	"github.com/factline/factline/events"
	"github.com/factline/factline/internal/sleep"
	"github.com/factline/factline/services/meter"
	"github.com/factline/factline/services/meter/measure"
)

// progress shows a suite's progress. On a terminal it is one line,
// rewritten once a second with a live elapsed time, so that a suite no
// service works on still shows the clock running; otherwise a plain line
// at most once a second as facts arrive. Warnings (no service has taken
// the suite up) go to errOut.
type progress struct {
	out    io.Writer
	errOut io.Writer
	tty    bool
	start  time.Time

	mu      sync.Mutex
	suite   string
	planned int
	// requested counts the run.requested facts seen: what tells a missing
	// meter from a missing runner.
	requested int
	counter   *measure.Counter // counts as the report counts
	lastLine  string
	lastPrint time.Time
	warned    map[string]bool // the idle warnings already given
	// claimedBefore is the stream sequence of the newest run.claimed of
	// any suite when the idle watch started (claimsKnown: the log said):
	// a newer one means runners serve, busy with other suites' runs.
	claimedBefore uint64
	claimsKnown   bool
	// disk watches the embedded server's store for a full disk (nil with
	// --nats: the server's disk is not this machine's to look at).
	disk *spaceWatch
	// wait, when set, is the runs waiting for a person, from the
	// runners' live status (waiting.go).
	wait *waiting
	// owed is the runs whose sealed candidate has no verdict yet, in
	// the facts followed through read (the suite's last one read): what
	// a local run waits for after its report (awaitOwedGrades), without
	// reading the suite again. It stays as small as the grader's backlog.
	owed map[string]bool
	read uint64
}

func newProgress(out, errOut io.Writer) *progress {
	return &progress{out: out, errOut: errOut, tty: isTerminal(out), start: time.Now(), warned: map[string]bool{}}
}

// isTerminal reports whether w is a character device (a terminal).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// idleWatch says when follow tells that no service has taken the suite
// up: after grace with no run started, it names the missing service and
// the command that starts it against url.
type idleWatch struct {
	grace time.Duration // 0: never
	url   string        // the NATS server the fleet should serve (redacted)
	// replicas is the run's --replicas: a serve that joins a cluster's
	// three-replica streams needs the same, or it is refused.
	replicas int
	// claims, when set, asks the log for the newest run.claimed of any
	// suite (bus.NewestOfKind): runners that claimed another suite's run
	// since this command started are serving, busy with work ahead of
	// this suite's, not missing.
	claims func(ctx context.Context) (seq uint64, suite, run string, err error)
}

// note prints a line of its own, ending a progress line in the way.
func (p *progress) note(format string, args ...any) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.endLine()
	fmt.Fprintf(p.out, format+"\n", args...)
}

// endLine ends the progress line on a terminal, so that what follows
// starts on a line of its own. Called with mu held.
func (p *progress) endLine() {
	if p.tty && p.lastLine != "" {
		fmt.Fprintln(p.out)
		p.lastLine = ""
	}
}

// finish shows the last state and ends the line.
func (p *progress) finish() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.tty {
		p.render()
	}
	p.endLine()
}

func (p *progress) summary() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	t := p.tally()
	return fmt.Sprintf("%d started, %d ended, %d graded, %d passed, %s", t.Started, t.Ended, t.Graded, t.Passed,
		time.Since(p.start).Round(100*time.Millisecond))
}

// tally is the suite's counts as the report counts them. Called with mu
// held.
func (p *progress) tally() measure.Tally {
	if p.counter == nil {
		return measure.Tally{}
	}
	return p.counter.Tally()
}

// line is the progress line. Called with mu held.
func (p *progress) line(elapsed time.Duration) string {
	t := p.tally()
	line := fmt.Sprintf("runs: %d/%d started, %d ended, %d graded, %d passed — %s", t.Started, p.planned,
		t.Ended, t.Graded, t.Passed, elapsed)
	if p.wait != nil {
		line += p.wait.summary(!p.tty)
	}
	return line
}

// render rewrites the terminal's progress line in place. Called with mu
// held.
func (p *progress) render() {
	line := p.line(time.Since(p.start).Truncate(time.Second))
	fmt.Fprintf(p.out, "\r%s%s", line, strings.Repeat(" ", max(0, len(p.lastLine)-len(line))))
	p.lastLine = line
}

// tick renders the terminal's line once a second and, after the idle
// watch's grace, says which service has not taken the suite up, until
// ctx ends.
func (p *progress) tick(ctx context.Context, idle idleWatch) {
	if idle.grace > 0 && idle.claims != nil {
		if before, _, _, err := idle.claims(ctx); err == nil {
			p.mu.Lock()
			p.claimedBefore, p.claimsKnown = before, true
			p.mu.Unlock()
		}
	}
	everyUntil(ctx, time.Second, func() bool {
		due := idle.grace > 0 && time.Since(p.start) >= idle.grace
		var busy string
		if due {
			busy = p.claimedElsewhere(ctx, idle)
		}
		p.mu.Lock()
		if p.tty {
			p.render()
		}
		if due {
			p.warnIdle(idle, busy)
		}
		p.mu.Unlock()
		return true
	})
}

// claimedElsewhere names the suite and run of the newest run runners
// claimed since this command started, when warnIdle would now say that no
// runner has taken a run of this suite (runs requested, none started, not
// yet said); "" otherwise, or when the log cannot tell.
func (p *progress) claimedElsewhere(ctx context.Context, idle idleWatch) string {
	p.mu.Lock()
	due := idle.claims != nil && p.claimsKnown && p.requested > 0 && p.tally().Started == 0 && !p.warned["runner"]
	before := p.claimedBefore
	p.mu.Unlock()
	if !due {
		return ""
	}
	seq, suite, run, err := idle.claims(ctx)
	if err != nil || seq <= before {
		return ""
	}
	return suite + "/" + run
}

// warnIdle says, once per missing service, that nothing has started and
// how to start what is missing: no run requested means no meter serves
// the server; runs requested but none claimed means no runner does,
// unless busy names the suite of a run runners claimed meanwhile: then
// they serve, and this suite's runs wait in line behind other work.
// Called with mu held.
func (p *progress) warnIdle(idle idleWatch, busy string) {
	if p.tally().Started > 0 {
		return
	}
	url, conn := idle.url, "--nats "+idle.url
	if idle.replicas > 1 {
		conn += fmt.Sprintf(" --replicas %d", idle.replicas)
	}
	after := time.Since(p.start).Truncate(time.Second)
	var key, msg string
	if p.requested == 0 {
		key = "meter"
		msg = fmt.Sprintf("no run of suite %q has been requested after %s: no meter serves %s. "+
			"Start the services (all five) with: factline serve %s", p.suite, after, url, conn)
	} else if busy != "" {
		key = "runner"
		msg = fmt.Sprintf("no run of suite %q has started after %s (%d of %d runs requested): the fleet's runners are taking other suites' runs "+
			"(the newest they took: %s), so this suite's runs wait in line and start as runners free up. "+
			"More runners go faster: factline serve --services runner %s", p.suite, after, min(p.requested, p.planned), p.planned, busy, conn)
	} else {
		key = "runner"
		msg = fmt.Sprintf("no runner has taken a run of suite %q after %s (%d of %d runs requested, none started). "+
			"Start one with: factline serve --services runner %s", p.suite, after, min(p.requested, p.planned), p.planned, conn)
	}
	if p.warned[key] {
		return
	}
	p.warned[key] = true
	p.endLine() // stderr is often the same terminal
	fmt.Fprintf(p.errOut, "factline run: %s (add the role's --user, --nkey or --creds where the server asks for one: docs/security.md)\n", msg)
}

// follow reads the suite's facts as they are committed until the meter
// reports the suite. It rides out the bus failing under it (a server
// restart, a leader election) by reading on from the last fact it saw, and
// gives up only on a full store (watchStore), which it reports, or when
// ctx ends.
func (p *progress) follow(ctx context.Context, b *bus.Bus, suite string, planned int, idle idleWatch) error {
	p.mu.Lock()
	p.suite, p.planned = suite, planned
	p.mu.Unlock()
	ctx, cancel := context.WithCancelCause(ctx)
	ticking := make(chan struct{})
	go func() { defer close(ticking); p.tick(ctx, idle) }()
	defer func() { cancel(nil); <-ticking }()
	var lastFact atomic.Int64
	lastFact.Store(time.Now().UnixNano())
	go watchStore(ctx, b, &lastFact, cancel)
	if p.disk != nil {
		go watchDisk(ctx, p.disk, &lastFact, cancel)
	}
	if p.wait != nil {
		watching := make(chan struct{})
		go func() { defer close(watching); p.watchStatus(ctx, b, suite) }()
		defer func() { cancel(nil); <-watching }()
	}
	reported := false
	var from uint64
	for try := 0; ; try++ {
		unread := false // a fact failed to count: read on from it
		last, err := b.Read(ctx, bus.ReadOptions{Filter: events.SuiteFilter(suite), Follow: true, FromSeq: from}, func(r bus.Raw) error {
			lastFact.Store(time.Now().UnixNano())
			if err := p.fact(r, meter.EarlierFacts(ctx, b, suite, r.Seq), func() { reported = true; cancel(nil) }); err != nil {
				unread = true
				return err
			}
			p.owe(r)
			from = r.Seq + 1
			return nil
		})
		if reported {
			return nil
		}
		if err := p.storeStopped(context.Cause(ctx)); err != nil {
			return err
		}
		if ctx.Err() != nil {
			return err
		}
		if last >= from && !unread {
			from = last + 1
		}
		slog.Warn("following the suite was interrupted; reading on", "after", from, "err", err)
		if err := sleep.For(ctx, min(time.Duration(try+1)*200*time.Millisecond, 2*time.Second)); err != nil {
			return err
		}
	}
}

// owe folds a fact followed into the runs owed a grade; each is folded
// once, in stream order (a fact that failed to count is read again, and
// folded then).
func (p *progress) owe(r bus.Raw) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.owed == nil {
		p.owed = map[string]bool{}
	}
	owedApply(p.owed, r)
	p.read = r.Seq
}

// owedAtReport returns the runs owed a grade in the facts followed, and
// the sequence of the last one read.
func (p *progress) owedAtReport() (map[string]bool, uint64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return maps.Clone(p.owed), p.read
}

// storeStopped says why a store that stopped taking writes ended the
// follow, and how to go on (nil for any other cause).
func (p *progress) storeStopped(cause error) error {
	var disk *diskFullError
	switch {
	case errors.As(cause, &disk):
		p.finish()
		return fmt.Errorf("%w; %s. The services hold their work and lose nothing. %s", cause, p.summary(), disk.remedy())
	case errors.Is(cause, bus.ErrNotStoring) && p.disk != nil:
		// The embedded server's disk is this machine's: say how full.
		p.finish()
		d := &diskFullError{dir: p.disk.dir, free: freeSpace(p.disk.dir), server: cause.Error()}
		return fmt.Errorf("%w; %s. The services hold their work and lose nothing. %s", d, p.summary(), d.remedy())
	case errors.Is(cause, bus.ErrNotStoring):
		p.finish()
		return fmt.Errorf("%w; %s. The services hold their work and lose nothing, but a stream that could not write stores nothing "+
			"until its server restarts: free space on the server's disk and restart nats-server (docs/operations.md#a-full-disk), "+
			"then run this command again to follow the suite to its report", cause, p.summary())
	case errors.Is(cause, bus.ErrStoreFull):
		p.finish()
		return fmt.Errorf("%w; %s. The services hold their work and lose nothing: free space on the server "+
			"(docs/operations.md#a-full-store), then run this command again to follow the suite to its report", cause, p.summary())
	}
	return nil
}

// fact updates the progress with one committed fact of the suite; done is
// called when the suite is reported. Its memory follows the runs in
// flight: the counter lets a run's facts go once it is settled.
func (p *progress) fact(r bus.Raw, earlier measure.Earlier, done func()) error {
	f, err := r.Fact()
	if err != nil {
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.counter == nil {
		p.counter = measure.NewCounter(f.Suite)
	}
	if err := p.counter.Apply(f, earlier); err != nil {
		return err
	}
	if p.wait != nil {
		p.wait.fact(f.Run, f.At)
	}
	switch f.Body.(type) {
	case events.RunRequested:
		p.requested++
		return nil
	case events.RunClaimed, events.RunEnded, events.GradeVerdict:
	case events.SuiteReported:
		done()
		return nil
	default:
		return nil
	}
	// A terminal's line is drawn by tick, once a second. Elsewhere, a
	// plain line at most once a second, and the last one.
	if !p.tty && (time.Since(p.lastPrint) >= time.Second || p.tally().Settled == p.planned) {
		fmt.Fprintln(p.out, p.line(time.Since(p.start).Round(100*time.Millisecond)))
		p.lastPrint = time.Now()
	}
	return nil
}
