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

	"github.com/spf13/cobra"

	"github.com/factline/factline/bus"
	"github.com/factline/factline/events"
	"github.com/factline/factline/fleet"
	"github.com/factline/factline/services/meter"
	"github.com/factline/factline/services/meter/measure"
	"github.com/factline/factline/services/runner/extensions"
	"github.com/factline/factline/suites"
)

// newRunCmd is the main job: submit a suite, let the services run, grade
// and measure it, and print the report.
func newRunCmd() *cobra.Command {
	var o runOptions
	c := &cobra.Command{
		Use:   "run SUITE.yaml",
		Short: "run a suite: submit it, run, grade and measure every attempt, print the report",
		Long: "Run a suite: without --nats, on an embedded JetStream server with all five services in\n" +
			"this process; with --nats, submit it to a fleet whose services run elsewhere. Shows\n" +
			"progress, waits for the meter's report and prints it.",
		Example: "  factline run examples/demo/suite.yaml --out /tmp/demo-report\n" +
			"  factline run suite.yaml --nats nats://10.0.0.5:4222 --timeout 2h",
		Args: exactArgs(1, "name one suite file: factline run SUITE.yaml"),
		RunE: func(c *cobra.Command, args []string) error {
			return o.run(c.Context(), args[0], c.OutOrStdout(), c.ErrOrStderr())
		},
	}
	fs := c.Flags()
	o.t.flags(fs)
	fs.BoolVar(&o.asJSON, "json", false, "print the report as JSON (progress goes to stderr)")
	fs.StringVar(&o.outDir, "out", "", "also write report.json, report.csv and report.svg to this directory")
	fsyncFlag(c, &o.t.fsync)
	fs.IntVar(&o.instances, "instances", 2, "runs the embedded runner drives at once")
	o.loadExtensions = extensionsFlag(fs)
	return c
}

// runOptions are run's flags.
type runOptions struct {
	t              target
	asJSON         bool
	outDir         string
	instances      int
	loadExtensions func() (*extensions.Allowlist, error)
}

func (o *runOptions) run(ctx context.Context, suitePath string, out, errOut io.Writer) error {
	t := &o.t
	if o.instances < 1 {
		return usageError{"--instances must be at least 1"}
	}
	suite, err := suites.Load(suitePath)
	if err != nil {
		return usageError{err.Error()}
	}
	allow, err := o.loadExtensions()
	if err != nil {
		return err
	}
	mode := t.fsync.get()
	// With --json, stdout carries only the report; progress goes to stderr.
	progress := newProgress(out)
	if o.asJSON {
		progress = newProgress(errOut)
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
		f, err := fleet.Start(ctx, b, serveOptions{instances: o.instances, extensions: allow}.fleetOptions(nil))
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
	if o.outDir != "" {
		if err := writeReports(o.outDir, report); err != nil {
			return err
		}
		progress.note("wrote report.json, report.csv and report.svg to %s", o.outDir)
	}
	if o.asJSON {
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
	started   map[string]bool
	ended     map[string]bool
	graded    map[string]bool
	passed    int
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
	return &progress{out: out, tty: tty, start: time.Now(), started: map[string]bool{}, ended: map[string]bool{}, graded: map[string]bool{}}
}

func (p *progress) note(format string, args ...any) {
	if p.tty && p.lastLine != "" {
		fmt.Fprintln(p.out)
		p.lastLine = ""
	}
	fmt.Fprintf(p.out, format+"\n", args...)
}

func (p *progress) summary() string {
	return fmt.Sprintf("%d started, %d ended, %d graded, %d passed, %s", len(p.started), len(p.ended), len(p.graded), p.passed,
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
	switch body := f.Body.(type) {
	case events.RunClaimed:
		p.started[f.Run] = true
	case events.RunEnded:
		p.ended[f.Run] = true
	case events.GradeVerdict:
		p.graded[f.Run] = true
		if body.Verdict.Result.Type() == "passed" {
			p.passed++
		}
	case events.SuiteReported:
		done()
		return nil
	default:
		return nil
	}
	line := fmt.Sprintf("runs: %d/%d started, %d ended, %d graded, %d passed — %s", len(p.started), planned,
		len(p.ended), len(p.graded), p.passed, time.Since(p.start).Round(100*time.Millisecond))
	switch {
	case p.tty:
		fmt.Fprintf(p.out, "\r%s%s", line, strings.Repeat(" ", max(0, len(p.lastLine)-len(line))))
		p.lastLine = line
	case time.Since(p.lastPrint) >= time.Second || len(p.graded) == planned:
		// Not a terminal: a plain line at most once a second.
		fmt.Fprintln(p.out, line)
		p.lastPrint = time.Now()
	}
	return nil
}
