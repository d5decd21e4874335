package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/factline/factline/bus"
	"github.com/factline/factline/events"
	"github.com/factline/factline/fleet"
	"github.com/factline/factline/services/meter/measure"
	"github.com/factline/factline/services/runner/extensions"
	"github.com/factline/factline/suites"
)

// newRunCmd is the main job: submit a suite, let the services run, grade
// and measure it, and print the report.
func newRunCmd() *cobra.Command {
	var o runOptions
	c := newCommand("run", exactArgs(1, "name one suite file: factline run SUITE.yaml"))
	fs := onTarget(c, &o.t, oneArg(o.run))
	fs.BoolVar(&o.asJSON, "json", false, "print the report as JSON (progress goes to stderr)")
	fs.StringVar(&o.outDir, "out", "", "also write report.json, report.csv and report.svg to this directory")
	fsyncFlag(c, &o.t.fsync)
	fs.IntVar(&o.instances, "instances", 2, "runs the embedded runner drives at once")
	requestWindowFlag(fs, &o.requestWindow)
	approvalTimeoutFlag(fs, &o.approvalTimeout)
	fs.DurationVar(&o.timeout, "timeout", 0, "give up after this long without the suite's report, exit 1 (0: wait as long as it takes); with --nats the fleet goes on with the suite")
	fs.DurationVar(&o.claimGrace, "claim-grace", 15*time.Second, "with --nats: after this long with no run started, say on stderr which service is missing and how to start it (0: never)")
	o.loadExtensions = extensionsFlag(fs)
	o.gates.flags(fs, "with --baseline: exit 3 when the suite's pass rate is more than POINTS under the baseline's (5: five points), or with scorer=NAME:VALUE a scorer's mean worse by more than VALUE; repeatable")
	fs.StringVar(&o.baseline, "baseline", "", "compare the suite with this one, SUITE@WHERE (a store directory, an export file or a nats:// URL), printed under the report; --fail-if-worse reads it")
	fs.BoolVar(&o.allowChanged, "allow-changed-cases", false, "with --baseline: pair the attempts of cases whose content differs from the baseline's")
	fs.StringArrayVar(&o.treatments, "treatment", nil, "with --baseline: pair the baseline's treatment NAME with this suite's NAME, or A_NAME=B_NAME; repeatable (default: the treatments both name, or the only one each has)")
	o.flags = fs
	return c
}

// runOptions are run's flags.
type runOptions struct {
	t             target
	asJSON        bool
	outDir        string
	instances     int
	requestWindow int
	// approvalTimeout is the embedded runner's (zero: its default).
	approvalTimeout time.Duration
	timeout         time.Duration
	claimGrace      time.Duration
	loadExtensions  func() (*extensions.Allowlist, error)
	gates           gateFlags
	baseline        string
	allowChanged    bool
	treatments      []string // --treatment: the baseline's treatments paired with this suite's
	pairs           []measure.TreatmentPair
	flags           *pflag.FlagSet
}

func (o *runOptions) run(ctx context.Context, suitePath string, out, errOut io.Writer) error {
	t := &o.t
	if o.instances < 1 {
		return usageError{"--instances must be at least 1"}
	}
	if err := checkRequestWindow(o.requestWindow); err != nil {
		return err
	}
	if err := refuseExplicitZero(o.flags, "request-window", "approval-timeout"); err != nil {
		return err
	}
	if err := checkApprovalTimeout(o.approvalTimeout); err != nil {
		return err
	}
	if o.timeout < 0 || o.claimGrace < 0 {
		return usageError{"--timeout and --claim-grace must not be negative (0: none)"}
	}
	gates, err := o.gates.parse()
	if err != nil {
		return err
	}
	var baseline suiteSource
	switch {
	case o.baseline != "":
		if baseline, err = parseSuiteSource(o.baseline); err != nil {
			return err
		}
		if baseline.where == "" {
			return usageError{fmt.Sprintf("--baseline %s: say where the baseline is: SUITE@DIR (a store), SUITE@FILE (an export) or SUITE@nats://HOST:PORT", o.baseline)}
		}
	case len(o.gates.worse) > 0:
		return usageError{"--fail-if-worse needs a --baseline SUITE@WHERE to be worse than"}
	case o.allowChanged:
		return usageError{"--allow-changed-cases goes with --baseline"}
	case len(o.treatments) > 0:
		return usageError{"--treatment goes with --baseline: it pairs the baseline's treatments with this suite's"}
	}
	if o.pairs, err = parseTreatmentPairs(o.treatments); err != nil {
		return err
	}
	suite, err := suites.Load(suitePath)
	if err != nil {
		return fileError{err}
	}
	if err := checkGateScorers(suite, gates); err != nil {
		return err
	}
	if err := o.checkOutputs(); err != nil {
		return err
	}
	allow, err := o.loadExtensions()
	if err != nil {
		return err
	}
	if o.baseline != "" {
		if err := o.checkBaseline(ctx, baseline, suite); err != nil {
			return err
		}
	}
	if t.url == "" {
		// A fleet's runners have their own allowlists; the embedded
		// runner has this one, so its refusals are known now.
		if err := checkExtensions(suite, allow); err != nil {
			return err
		}
		// So are the models it and the embedded grader build.
		if err := checkModels(suite); err != nil {
			return err
		}
		// A runner drives a parent and its child on two workers: with one,
		// every delegate call would wait, without a word, for a child that
		// cannot start until the decision timeout cancels it. Another
		// process's runner on a shared store could take the child, so this
		// is said, not refused.
		if ids := delegatingTreatments(suite); o.instances == 1 && len(ids) > 0 {
			fmt.Fprintf(errOut, "warning: --instances 1: treatment %s allows delegation, and this process's runner needs a second "+
				"instance to run a child beside the parent waiting for it: with one, each delegate call waits until the runner's "+
				"decision timeout (10m) cancels the child, unless another process's runner takes it; give --instances 2 or more "+
				"(docs/tools.md#delegate)\n", strings.Join(ids, ", "))
		}
	}
	// With --json, stdout carries only the report; progress goes to stderr.
	progress := newProgress(out, errOut)
	if o.asJSON {
		progress = newProgress(errOut, errOut)
	}
	// What an interrupted or timed-out run leaves, and how to go on.
	var goesOn string
	var localStore string // the store whose services run in this process, if any
	var idle idleWatch

	var b *bus.Bus
	var closeBus func()
	if t.url != "" {
		if t.store != "" {
			return usageError{"give --store or --nats, not both"}
		}
		if o.requestWindow != 0 {
			return usageError{"--request-window sets the meter this process runs; with --nats the fleet's meter requests the runs (factline serve --request-window)"}
		}
		if o.approvalTimeout != 0 {
			return usageError{"--approval-timeout sets the runner this process runs; with --nats the fleet's runners wait for approvals (factline serve --approval-timeout)"}
		}
		if b, closeBus, err = t.open(ctx); err != nil {
			return err
		}
		if err := t.probe(ctx, b, submitterNeeds()); err != nil {
			closeBus()
			return err
		}
		progress.note("submitting to %s; services run elsewhere", redactURL(t.url))
		idle = idleWatch{grace: o.claimGrace, url: redactURL(t.url), replicas: t.replicas,
			claims: func(ctx context.Context) (uint64, string, string, error) {
				return b.NewestOfKind(ctx, events.KindRunClaimed)
			}}
		goesOn = "The suite stays submitted and the fleet goes on with it: run the same command again " +
			"to follow it to its report (it reattaches; nothing is submitted twice)"
	} else {
		store := t.store
		if store == "" {
			if store, err = os.MkdirTemp("", "factline-"+suite.File.Name+"-"); err != nil {
				return err
			}
		}
		// This process opens the store's server, or attaches to the process
		// that has and runs its own services beside that one's.
		t.store = store
		abs, _ := filepath.Abs(store)
		// The server's one log line that matters here: a write that failed
		// for want of disk space (watchDisk tells the follower). Only the
		// holder's server logs to it; an attached run still names the
		// store's disk when the holder's server stops storing.
		progress.disk = &spaceWatch{dir: abs}
		t.serverLog = progress.disk
		var release func()
		if b, release, err = t.open(ctx); err != nil {
			return err
		}
		// The services stop before the connection closes (deferred calls
		// run last first): closed under them, they would warn instead of
		// stopping quietly.
		closeBus = func() {}
		defer release()
		// The runs cut off with this process are said in one log line
		// naming the first few: the command's own message says how to go
		// on with them all.
		f, err := fleet.Start(ctx, b, serveOptions{instances: o.instances, extensions: allow, requestWindow: o.requestWindow,
			approvalTimeout: o.approvalTimeout, handedBackListed: runHandedBackListed}.fleetOptions(nil))
		if err != nil {
			return err
		}
		defer f.Stop()
		localStore = abs
		// The runs of this process's runner that wait for a person are
		// said on the progress line; a fleet's live status is not the
		// submitter's to read (docs/security.md).
		progress.wait = newWaiting("--store " + shellWord(abs))
		goesOn = fmt.Sprintf("Its runs stop with this process; the store %s keeps everything done so far: "+
			"run the same command again with --store %s to go on from there", abs, shellWord(abs))
		if runsExternalAgents(suite) {
			// The runner resumes its own loop from the log; an external
			// agent's process is gone, so its run is ended, not resumed.
			goesOn += fmt.Sprintf(". A run of an external agent cut off here cannot be resumed: going on ends it errored "+
				"(interrupted), and factline retry %s --store %s runs it again", shellWord(suite.File.Name), shellWord(abs))
		}
		progress.note("%s; all five services in this process", t.conn.Describe())
	}
	defer closeBus()

	pub, err := suites.Publish(ctx, b.Blobs(), suite)
	if err != nil {
		return err
	}
	planned := int(measure.Size(pub.Submitted)) // counted, not built: the meter streams the roster
	progress.note("suite %q: %d cases × %d treatments × %d trials = %d runs", suite.File.Name,
		len(pub.Submitted.Cases), len(pub.Submitted.Treatments), pub.Submitted.Trials, planned)
	if len(suite.Skipped) > 0 {
		// Named, not only counted: a misspelt split tag drops a case its
		// author meant to run.
		progress.note("left out of split %q (tagged with another split): %s", suite.File.Split, strings.Join(suite.Skipped, ", "))
	}
	if err := suites.Submit(ctx, b, pub, "factline-run"); err != nil {
		var exists *suites.ExistsError
		if errors.As(err, &exists) {
			elsewhere := "use another store (a new --store DIR, or no --store: run makes one)"
			if t.url != "" {
				elsewhere = "submit it to another NATS server"
			}
			return fmt.Errorf("%w. To run the edited suite, rename the suite (name: in %s) or %s; "+
				"to go on with the suite this log holds, run the file it was submitted from", exists, suitePath, elsewhere)
		}
		return err
	}
	follow := ctx
	if o.timeout > 0 {
		var cancel context.CancelFunc
		follow, cancel = context.WithTimeoutCause(ctx, o.timeout, errGaveUp)
		defer cancel()
	}
	if err := progress.follow(follow, b, suite.File.Name, planned, idle); err != nil {
		switch {
		case ctx.Err() == nil && errors.Is(context.Cause(follow), errGaveUp):
			progress.finish()
			if idle.url != "" {
				busy := progress.claimedElsewhere(ctx, idle)
				progress.mu.Lock()
				progress.warnIdle(idle, busy)
				progress.mu.Unlock()
			}
			o.writePartialJUnit(ctx, b, suite.File.Name, errOut)
			return exitWith(exitIncomplete, "gave up after %s (--timeout) before the suite was measured: %s. %s", o.timeout, progress.summary(), goesOn)
		case errors.Is(context.Cause(ctx), context.Canceled):
			progress.finish()
			fmt.Fprintf(errOut, "interrupted: %s. %s\n", progress.summary(), goesOn)
			o.writePartialJUnit(ctx, b, suite.File.Name, errOut)
			return errors.New("interrupted before the suite was measured")
		}
		return err
	}
	progress.finish()
	if localStore != "" {
		// This process's services stop with it: first let the grader
		// finish what it owes the suite.
		if err := awaitOwedGrades(ctx, b, suite.File.Name, progress, localStore); err != nil {
			return err
		}
	}
	report, err := o.writeOutputs(ctx, b, suite.File.Name, out, progress.note)
	// A file not written after the run leaves the report standing: the
	// table is printed and the gates are held to it all the same.
	var notWritten *unwrittenError
	if errors.As(err, &notWritten) {
		err = nil
	}
	if err != nil {
		return err
	}
	if !o.asJSON {
		fmt.Fprintln(out)
		if err = measure.WriteTable(out, report); err == nil {
			err = writeWhys(out, report)
		}
	}
	if err != nil {
		return err
	}
	failures := measure.CheckReport(report, gates)
	if o.baseline != "" {
		more, err := o.compareWithBaseline(ctx, b, baseline, suite.File.Name, gates, out, errOut)
		if err != nil {
			return err
		}
		failures = append(failures, more...)
	}
	warnUngraded(errOut, report, gates)
	return withUnwritten(verdict("suite "+report.Suite, report, failures), notWritten, len(gates), errOut)
}

// compareWithBaseline compares the suite just run with --baseline, prints
// the comparison (to stderr under --json, which keeps stdout the report's)
// and holds it to the --fail-if-worse gates.
func (o *runOptions) compareWithBaseline(ctx context.Context, b *bus.Bus, baseline suiteSource, suite string, gates []measure.Gate,
	out, errOut io.Writer) ([]measure.GateFailure, error) {
	base, bad, err := baseline.load(ctx, &o.t)
	if err != nil {
		return nil, fmt.Errorf("--baseline: %w", err)
	}
	for _, r := range bad {
		fmt.Fprintf(errOut, "warning: --baseline %s: message %d on %s is left out of the comparison: %v\n", o.baseline, r.Seq, r.Subject, r.Err)
	}
	this, err := readSuiteLog(ctx, b, suite)
	if err != nil {
		return nil, err
	}
	c, err := measure.CompareSuites(measure.Side{Source: o.baseline, Log: base}, measure.Side{Source: suite + " (this run)", Log: this},
		measure.CrossOptions{AllowChangedCases: o.allowChanged, Treatments: o.pairs})
	if err != nil {
		return nil, fmt.Errorf("--baseline: %w", err)
	}
	w := out
	if o.asJSON {
		w = errOut
	}
	fmt.Fprintln(w)
	if err := measure.WriteCompareText(w, c); err != nil {
		return nil, err
	}
	var worse []measure.Gate
	for _, g := range gates {
		if g.Kind == measure.GateWorse {
			worse = append(worse, g)
		}
	}
	return measure.CheckComparison(c, worse), nil
}

// writeOutputs writes what a finished run's flags ask of its report
// (--out's files, --junit's, --json's report on out), noting --out's,
// and returns the report to print the table of and hold to the gates.
// A file of --out or --junit that cannot be written does not stop the
// others: the report comes back with an *unwrittenError naming each.
func (o *runOptions) writeOutputs(ctx context.Context, b *bus.Bus, suite string, out io.Writer, note func(string, ...any)) (measure.Report, error) {
	// The run holds the stored report's figures and the few rows the
	// table names, never a row for each attempt (at the suite's end,
	// where the process peaks: docs/benchmarks.md#suite-size): what
	// --json, --out and --junit write of the rows is written from the
	// stored blob, spooled to a file as it is read.
	keep := measure.KeptForTheTable
	var counts measure.JUnitCounts
	if o.gates.junit != "" {
		// The JUnit file's head counts its cases before the first.
		keep = func(a *measure.AttemptRow) bool {
			counts.Add(a)
			return measure.KeptForTheTable(a)
		}
	}
	var spool *os.File
	if o.asJSON || o.outDir != "" || o.gates.junit != "" {
		f, err := os.CreateTemp("", "factline-report-*.json")
		if err != nil {
			return measure.Report{}, fmt.Errorf("spool the report: %w", err)
		}
		defer os.Remove(f.Name())
		defer f.Close()
		spool = f
	}
	var tee io.Writer // never a nil *os.File, which is a non-nil Writer
	if spool != nil {
		tee = spool
	}
	report, blob, err := finalReport(ctx, b, suite, keep, tee)
	if err != nil {
		return measure.Report{}, err
	}
	js := reportJSON{r: report}
	junit := func(w io.Writer) error { return measure.WriteJUnit(w, report) }
	if blob.digest != "" {
		js.spool = spool
		junit = func(w io.Writer) error { return writeStoredJUnit(ctx, b, w, suite, blob, counts, spool) }
	}
	var failed []error
	if o.outDir != "" {
		if errs := writeReports(o.outDir, report, js.writeTo); len(errs) > 0 {
			failed = append(failed, errs...)
		} else {
			note("wrote report.json, report.csv and report.svg to %s", o.outDir)
		}
	}
	if err := o.gates.writeJUnitWith(junit); err != nil {
		failed = append(failed, err)
	}
	if o.asJSON {
		if err := js.writeTo(out); err != nil {
			return measure.Report{}, err
		}
	}
	return report, unwritten(failed)
}

// reportJSON writes a finished run's report JSON: the stored blob's bytes
// from the file they were spooled to as they were read (spool, when the
// report is the stored one: finalReport proved them WriteJSON's of the
// whole report, whose rows r does not hold), or else WriteJSON's of r.
type reportJSON struct {
	r     measure.Report
	spool *os.File
}

func (j reportJSON) writeTo(w io.Writer) error {
	if j.spool == nil {
		return measure.WriteJSON(w, j.r)
	}
	if _, err := j.spool.Seek(0, io.SeekStart); err != nil {
		return fmt.Errorf("the spooled report: %w", err)
	}
	if _, err := io.Copy(w, j.spool); err != nil {
		return fmt.Errorf("the spooled report: %w", err)
	}
	return nil
}

// runsExternalAgents reports whether any treatment of the suite runs an
// external agent (docs/agents.md#external-agents).
func runsExternalAgents(suite *suites.Suite) bool {
	for _, t := range suite.Treatments {
		if t.Agent != nil {
			return true
		}
	}
	return false
}

// delegatingTreatments are the IDs of the suite's treatments that allow
// delegation.
func delegatingTreatments(suite *suites.Suite) []string {
	var ids []string
	for _, t := range suite.Treatments {
		if t.Delegation != nil && t.Delegation.Allowed {
			ids = append(ids, t.ID)
		}
	}
	return ids
}

// runHandedBackListed is how many of the runs cut off by --timeout,
// SIGTERM or Ctrl-C the embedded runner's one line about them names.
const runHandedBackListed = 5

// errGaveUp is the cause of a run's --timeout.
var errGaveUp = errors.New("--timeout")

// writeReports writes --out's files: report.json (json writes it) and
// the CSV and SVG of the report's figures. It tries each, and returns an
// error for each it could not write, naming the file and why.
func writeReports(dir string, r measure.Report, json func(io.Writer) error) []error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return []error{fmt.Errorf("--out %s not written: %w", dir, err)}
	}
	var errs []error
	for _, f := range []struct {
		name  string
		write func(io.Writer, measure.Report) error
	}{
		{"report.json", func(w io.Writer, _ measure.Report) error { return json(w) }},
		{"report.csv", measure.WriteCSV}, {"report.svg", measure.WriteSVG},
	} {
		path := filepath.Join(dir, f.name)
		if err := writeFile(path, func(w io.Writer) error { return f.write(w, r) }); err != nil {
			errs = append(errs, fmt.Errorf("--out %s not written: %w", path, err))
		}
	}
	return errs
}

// writeFile creates (or truncates) path and writes it with write; an
// error closing it (where a full disk may first show) is its error too.
func writeFile(path string, write func(io.Writer) error) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	err = write(f)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}
