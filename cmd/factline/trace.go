package main

import (
	"context"
	"fmt"
	"io"
	"net/url"
	"os"

	"github.com/spf13/cobra"

	"github.com/factline/factline/events"
	"github.com/factline/factline/projections/replay"
	"github.com/factline/factline/projections/spans"
	"github.com/factline/factline/secrets"
)

// newTraceCmd replays the log into OpenTelemetry spans sent over OTLP.
func newTraceCmd() *cobra.Command {
	var o traceFlags
	c := newCommand("trace", noArgs)
	fs := o.src.flags(c, o.run, "export file to replay instead of a store or a server")
	fs.StringVar(&o.runID, "run", "", "only this run's spans (and its suite's)")
	fs.StringVar(&o.suite, "suite", "", "only this suite's spans; with --run, the suite of the run, needed when suites share the run's ID")
	o.src.fromSeqFlag(fs)
	fs.BoolVar(&o.follow, "follow", false, "keep sending the spans of new facts as they are committed, until interrupted")
	fs.StringVar(&o.endpoint, "otlp-endpoint", "", "OTLP/gRPC receiver, a URL: http://host:4317 (plaintext) or https://… (default $OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, then $OTEL_EXPORTER_OTLP_ENDPOINT)")
	fs.BoolVar(&o.content, "content", false, "also send what the model wrote and the tools were given and returned (redacted); off by default")
	return c
}

// traceFlags are trace's flags.
type traceFlags struct {
	src      logSource
	runID    string
	suite    string
	follow   bool
	endpoint string
	content  bool
}

// otlpEndpoint is where spans go: the flag, or the environment variables
// every OpenTelemetry exporter reads. It must be a URL, so that whether
// the connection is plaintext is said, not guessed.
func (o *traceFlags) otlpEndpoint() (*url.URL, error) {
	raw, from := o.endpoint, "--otlp-endpoint"
	for _, env := range []string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT"} {
		if raw == "" {
			raw, from = os.Getenv(env), "$"+env
		}
	}
	if raw == "" {
		return nil, usageError{"say where to send the spans: --otlp-endpoint http://HOST:4317 or $OTEL_EXPORTER_OTLP_ENDPOINT"}
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, usageError{fmt.Sprintf("%s %q: want a URL, http://HOST:PORT (plaintext) or https://HOST:PORT", from, raw)}
	}
	return u, nil
}

func (o *traceFlags) run(ctx context.Context, _ []string, out, errOut io.Writer) error {
	endpoint, err := o.otlpEndpoint()
	if err != nil {
		return err
	}
	// Secrets this process knows are kept out of every span, over and
	// above what the runner redacted when it made the facts.
	red, err := secrets.FromEnvironment()
	if err != nil {
		return err
	}
	if err := checkSuiteFlag(o.suite); err != nil {
		return err
	}
	if o.runID != "" {
		if err := events.ValidateToken("run", o.runID); err != nil {
			return usageError{fmt.Sprintf("--run %q: %v", o.runID, err)}
		}
	}
	if file, err := o.src.fromFile(ctx); err != nil {
		return err
	} else if file && o.follow {
		return usageError{"--follow reads a store or a server: an export file does not grow"}
	} else if file {
		// Spans are sent while the file is read, and a file's damage may
		// show only at its end: read it whole first, so that none of a
		// file that is not whole is sent.
		if err := o.src.checkWhole(ctx); err != nil {
			return err
		}
	}
	src, b, closeSource, err := o.src.replay(ctx, o.follow)
	if err != nil {
		return err
	}
	defer closeSource()
	suite := o.suite
	if o.runID != "" {
		// Spans leave as they are made: the run's suite is settled
		// before any is, or two suites' runs of the ID would go out as
		// one command's answer.
		suites, err := suitesOfRunIn(ctx, b, o.src.file, o.runID)
		if err != nil {
			return err
		}
		if suite, err = suiteOfRun(suite, o.runID, suites); err != nil {
			return err
		}
	}
	exp, err := newSpanExporter(ctx, endpoint)
	if err != nil {
		return err
	}
	var keep replay.Filter
	if o.runID != "" || suite != "" {
		keep = func(f events.Fact) bool {
			return (suite == "" || f.Suite == suite) && (o.runID == "" || f.Run == o.runID || f.Run == events.SuiteScope)
		}
	}
	in := &traceInstance{p: spans.New(spans.Options{Content: o.content, Redact: red.Redact}), exp: exp}
	res, err := replay.Run(ctx, src, in, keep)
	if o.follow && ctx.Err() != nil {
		err = nil // interrupted: a follow ends when it is told to
	}
	if err == nil && !o.follow {
		// The log's end: what is still open (a run in flight) goes out
		// too, marked open.
		for _, s := range in.p.Flush() {
			exp.add(s)
		}
	}
	// The export outlives an interrupt: what was projected is sent.
	shutCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), exportTimeout)
	defer cancel()
	if serr := exp.shutdown(shutCtx); serr != nil && err == nil {
		err = serr
	}
	for _, bad := range res.Bad {
		fmt.Fprintf(errOut, "skipped message %d on %s: %v\n", bad.Seq, bad.Subject, bad.Err)
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "trace: %d facts, %d spans in %d traces sent to %s, last sequence %d\n",
		res.Applied, exp.spans, len(exp.traces), redactURL(endpoint.String()), res.LastSeq)
	return nil
}

// traceInstance feeds the span projection from the replay driver and
// hands each finished span to the exporter.
type traceInstance struct {
	p   *spans.Projector
	exp *spanExporter
}

func (i *traceInstance) Apply(f events.Fact) {
	for _, s := range i.p.Apply(f) {
		i.exp.add(s)
	}
}

func (i *traceInstance) View() any { return nil }
