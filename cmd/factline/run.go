package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/factline/factline/bus"
	"github.com/factline/factline/events"
	"github.com/factline/factline/fleet"
	"github.com/factline/factline/services/meter"
	"github.com/factline/factline/services/meter/measure"
	"github.com/factline/factline/suites"
)

// runRun is the main job: submit a suite, let the services run, grade and
// measure it, and print the report.
func runRun(ctx context.Context, args []string, out io.Writer) error {
	fs := newFlags("run", "run SUITE.yaml [--store DIR | --nats URL] [--json] [--out DIR]", out)
	var t target
	t.flags(fs)
	asJSON := fs.Bool("json", false, "print the report as JSON")
	outDir := fs.String("out", "", "also write report.json, report.csv and report.svg to this directory")
	fsync := fs.String("fsync", string(bus.SyncAlways), "embedded server durability: always or interval")
	instances := fs.Int("instances", 2, "runs the embedded runner drives at once")
	loadExtensions := extensionsFlag(fs)
	pos, rest := splitPositional(args, 1)
	if err := parse(fs, rest); err != nil {
		return err
	}
	pos = append(pos, fs.Args()...)
	if len(pos) != 1 {
		return usageError{"name one suite file: factline run SUITE.yaml"}
	}
	if *instances < 1 {
		return usageError{"--instances must be at least 1"}
	}
	suite, err := suites.Load(pos[0])
	if err != nil {
		return usageError{err.Error()}
	}
	allow, err := loadExtensions()
	if err != nil {
		return err
	}
	mode, err := bus.ParseDurability(*fsync)
	if err != nil {
		return usageError{err.Error()}
	}
	// With --json, stdout carries only the report; progress goes to stderr.
	progress := newProgress(out)
	if *asJSON {
		progress = newProgress(os.Stderr)
	}

	var b *bus.Bus
	var closeBus func()
	if t.url != "" {
		if t.store != "" {
			return usageError{"give --store or --nats, not both"}
		}
		if b, closeBus, err = t.open(ctx); err != nil {
			return err
		}
		if err := t.probe(ctx, b, submitterNeeds()); err != nil {
			closeBus()
			return err
		}
		progress.note("submitting to %s; services run elsewhere", t.url)
	} else {
		store := t.store
		if store == "" {
			if store, err = os.MkdirTemp("", "factline-"+suite.File.Name+"-"); err != nil {
				return err
			}
		}
		if err := notServed(store); err != nil {
			return err
		}
		srv, err := bus.StartEmbedded(ctx, bus.EmbeddedConfig{StoreDir: store, Durability: mode})
		if err != nil {
			return err
		}
		nc, err := srv.Connect()
		if err != nil {
			srv.Shutdown()
			return err
		}
		if b, err = bus.Open(ctx, nc, bus.Config{}); err != nil {
			nc.Close()
			srv.Shutdown()
			return err
		}
		// The services stop before the connection closes (deferred calls
		// run last first): closed under them, they would warn instead of
		// stopping quietly.
		closeBus = func() {}
		defer func() { nc.Close(); srv.Shutdown() }()
		f, err := fleet.Start(ctx, b, serveOptions{instances: *instances, extensions: allow}.fleetOptions(nil))
		if err != nil {
			return err
		}
		defer f.Stop()
		abs, _ := filepath.Abs(store)
		progress.note("embedded JetStream in %s (fsync: %s); all five services in this process", abs, mode)
	}
	defer closeBus()

	pub, err := suites.Publish(ctx, b, suite)
	if err != nil {
		return err
	}
	planned := int(measure.Size(pub.Submitted)) // counted, not built: the meter streams the roster
	progress.note("suite %q: %d cases × %d treatments × %d trials = %d runs", suite.File.Name,
		len(pub.Submitted.Cases), len(pub.Submitted.Treatments), pub.Submitted.Trials, planned)
	if err := suites.Submit(ctx, b, pub, "factline-run"); err != nil {
		return err
	}
	if err := progress.follow(ctx, b, suite.File.Name, planned); err != nil {
		if ctx.Err() != nil {
			fmt.Fprintf(out, "\ncancelled: %s; the log keeps everything done so far\n", progress.summary())
			return errors.New("cancelled before the suite was measured")
		}
		return err
	}
	report, err := meter.Report(ctx, b, suite.File.Name)
	if err != nil {
		return err
	}
	if *outDir != "" {
		if err := writeReports(*outDir, report); err != nil {
			return err
		}
		progress.note("wrote report.json, report.csv and report.svg to %s", *outDir)
	}
	if *asJSON {
		return measure.WriteJSON(out, report)
	}
	fmt.Fprintln(out)
	return measure.WriteTable(out, report)
}

func writeReports(dir string, r measure.Report) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for name, write := range map[string]func(io.Writer, measure.Report) error{
		"report.json": measure.WriteJSON, "report.csv": measure.WriteCSV, "report.svg": measure.WriteSVG,
	} {
		f, err := os.Create(filepath.Join(dir, name))
		if err != nil {
			return err
		}
		err = write(f, r)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
	}
	return nil
}

// progress shows a suite's progress: one updating line on a terminal,
// plain lines otherwise.
type progress struct {
	out       io.Writer
	tty       bool
	start     time.Time
	mu        sync.Mutex
	counter   *measure.Counter // counts as the report counts
	lastLine  string
	lastPrint time.Time
}

func newProgress(out io.Writer) *progress {
	tty := false
	if f, ok := out.(*os.File); ok {
		if st, err := f.Stat(); err == nil && st.Mode()&os.ModeCharDevice != 0 {
			tty = true
		}
	}
	return &progress{out: out, tty: tty, start: time.Now()}
}

func (p *progress) note(format string, args ...any) {
	if p.tty && p.lastLine != "" {
		fmt.Fprintln(p.out)
		p.lastLine = ""
	}
	fmt.Fprintf(p.out, format+"\n", args...)
}

func (p *progress) summary() string {
	var t measure.Tally
	if p.counter != nil {
		t = p.counter.Tally()
	}
	return fmt.Sprintf("%d started, %d ended, %d graded, %d passed, %s", t.Started, t.Ended, t.Graded, t.Passed,
		time.Since(p.start).Round(100*time.Millisecond))
}

// follow reads the suite's facts as they are committed until the meter
// reports the suite. It rides out the bus failing under it (a server
// restart, a leader election) by reading on from the last fact it saw, and
// gives up only on a full store (watchStore), which it reports.
func (p *progress) follow(ctx context.Context, b *bus.Bus, suite string, planned int) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var lastFact atomic.Int64
	lastFact.Store(time.Now().UnixNano())
	go watchStore(ctx, b, &lastFact, cancel)
	reported := false
	var from uint64
	for try := 0; ; try++ {
		last, err := b.Read(ctx, bus.ReadOptions{Filter: events.SuiteFilter(suite), Follow: true, FromSeq: from}, func(r bus.Raw) error {
			lastFact.Store(time.Now().UnixNano())
			from = r.Seq + 1
			return p.fact(r, planned, func() { reported = true; cancel(nil) })
		})
		if reported {
			return nil
		}
		if cause := context.Cause(ctx); errors.Is(cause, bus.ErrStoreFull) {
			if p.tty && p.lastLine != "" {
				fmt.Fprintln(p.out)
			}
			return fmt.Errorf("%w; %s. The services hold their work and lose nothing: free space on the server "+
				"(docs/operations.md#a-full-store), then run this command again to follow the suite to its report", cause, p.summary())
		}
		if ctx.Err() != nil {
			return err
		}
		if last >= from {
			from = last + 1
		}
		slog.Warn("following the suite was interrupted; reading on", "after", from, "err", err)
		if err := sleepCtx(ctx, min(time.Duration(try+1)*200*time.Millisecond, 2*time.Second)); err != nil {
			return err
		}
	}
}

// fact updates the progress with one committed fact of the suite; done is
// called when the suite is reported.
func (p *progress) fact(r bus.Raw, planned int, done func()) error {
	f, err := r.Fact()
	if err != nil {
		return nil
	}
	if p.counter == nil {
		p.counter = measure.NewCounter(f.Suite)
	}
	p.counter.Apply(f)
	switch f.Body.(type) {
	case events.RunClaimed, events.RunEnded, events.GradeVerdict:
	case events.SuiteReported:
		done()
		return nil
	default:
		return nil
	}
	t := p.counter.Tally()
	line := fmt.Sprintf("runs: %d/%d started, %d ended, %d graded, %d passed — %s", t.Started, planned,
		t.Ended, t.Graded, t.Passed, time.Since(p.start).Round(100*time.Millisecond))
	switch {
	case p.tty:
		fmt.Fprintf(p.out, "\r%s%s", line, strings.Repeat(" ", max(0, len(p.lastLine)-len(line))))
		p.lastLine = line
	case time.Since(p.lastPrint) >= time.Second || t.Settled == planned:
		// Not a terminal: a plain line at most once a second.
		fmt.Fprintln(p.out, line)
		p.lastPrint = time.Now()
	}
	return nil
}
