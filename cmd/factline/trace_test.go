// The tests that send spans to a real Jaeger carry the build tag deploy:
// on a machine that has not built Jaeger yet (tools/jaeger, make jaeger)
// building it takes many minutes, so they run in make deploy-test, as
// .ci/run does after make test (docs/traces.md#tests).

//go:build deploy

package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/factline/factline/bus"
	"github.com/factline/factline/events"
	"github.com/factline/factline/internal/testutil"
	"github.com/factline/factline/projections/replay"
	"github.com/factline/factline/projections/spans"
	"github.com/factline/factline/secrets"
)

// leakToken is a secret the runner did not know (it is not in the run's
// environment), so the facts hold it: in a tool's arguments, the tool's
// result and the model's reply. The trace command knows it.
const leakToken = "tok-4c1f9a2e7b30d85e"

// tracedSuite writes a one-run suite whose scripted model reads a file
// holding leakToken, lists a directory named by it, and answers with it.
func tracedSuite(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	files := map[string]string{
		"suite.yaml":        "name: traced\ncases: [{path: case.yaml}]\ntreatments: [{path: treatment.yaml}]\ntrials: 1\n",
		"case.yaml":         "id: leak\ninstruction: Which token does the service use?\nfixture: fixture\nbudget: {steps: 3}\ntools: [read_file, list_files, task_complete]\ngrading:\n  instruments:\n    - {id: unchanged, kind: scope, allow: ['*.tmp']}\n",
		"treatment.yaml":    "id: base\nmodel: {provider: scripted, scripts: scripts}\n",
		"fixture/NOTES.md":  "The service token is " + leakToken + ".\n",
		"scripts/leak.yaml": "turns:\n  - calls: [{id: read, name: read_file, args: {path: NOTES.md}}, {id: list, name: list_files, args: {path: " + leakToken + "}}]\n    usage: {input_tokens: 500, output_tokens: 20, cost: 1}\n  - text: The service uses " + leakToken + ".\n    usage: {input_tokens: 600, output_tokens: 15, cost: 1}\n",
	}
	for name, body := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return filepath.Join(dir, "suite.yaml")
}

// exportedFacts reads an export file's facts in log order.
func exportedFacts(t *testing.T, file string) []events.Fact {
	t.Helper()
	var facts []events.Fact
	_, err := replay.File(file).Each(context.Background(), func(raw bus.Raw) error {
		f, err := raw.Fact()
		if err != nil {
			return err
		}
		facts = append(facts, f)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return facts
}

// tracedStore runs the traced suite into a new store and exports it.
func tracedStore(t *testing.T) (store, export string) {
	t.Helper()
	store = t.TempDir()
	if code, _, errOut := runCLI(t, "run", tracedSuite(t), "--store", store, "--fsync", "interval"); code != 0 {
		t.Fatalf("run exited %d: %s", code, errOut)
	}
	export = filepath.Join(t.TempDir(), "traced.flx")
	if code, _, errOut := runCLI(t, "export", "--store", store, "--out", export); code != 0 {
		t.Fatalf("export: %d %s", code, errOut)
	}
	return store, export
}

// A suite's run, replayed into a real OTLP receiver (Jaeger), is there as
// the projection made it: the tree, every span's name, IDs, start and
// duration, its attributes; the IDs are the facts', so a second replay
// adds no new span; and a secret the trace command knows is in no span,
// though the facts hold it.
func TestTraceSendsARunToJaegerAsItsFactsSay(t *testing.T) {
	j := startJaeger(t)
	store, export := tracedStore(t)
	facts := exportedFacts(t, export)
	var leaked bool
	for _, f := range facts {
		if m, ok := f.Body.(events.ModelReplied); ok && strings.Contains(m.Text, leakToken) {
			leaked = true
		}
	}
	if !leaked {
		t.Fatal("the facts do not hold the token: the redaction below would prove nothing")
	}

	// Only the trace command knows the token is secret.
	t.Setenv("LEAK_TOKEN", leakToken)
	t.Setenv(secrets.EnvSecretNames, "LEAK_TOKEN")
	code, out, errOut := runCLI(t, "trace", "--store", store, "--otlp-endpoint", j.otlp, "--content")
	if code != 0 {
		t.Fatalf("trace exited %d: %s%s", code, out, errOut)
	}
	red, err := secrets.FromEnvironment()
	if err != nil {
		t.Fatal(err)
	}
	want := spans.Project(facts, spans.Options{Content: true, Redact: red.Redact})
	if !strings.Contains(out, fmt.Sprintf("%d spans in 2 traces", len(want))) {
		t.Errorf("trace says %q, want %d spans in 2 traces", out, len(want))
	}

	var runTrace spans.TraceID
	for _, f := range facts {
		if f.Kind() == events.KindRunRequested {
			runTrace = spans.TraceID(f.ID)
		}
	}
	var got jaegerTrace
	var raw []byte
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	wantRun := 0
	for _, s := range want {
		if s.Trace == runTrace {
			wantRun++
		}
	}
	testutil.Until(ctx, t, "jaeger holds the run's spans", func() bool {
		var found bool
		got, raw, found = j.trace(t, runTrace.String())
		return found && len(got.Spans) >= wantRun
	})
	checkJaegerTrace(t, got, want, runTrace)

	// The tree, by name, as a person reads it in Jaeger's UI.
	names := map[string]string{} // span ID → name
	for _, s := range got.Spans {
		names[s.SpanID] = s.OperationName
	}
	var tree []string
	for _, s := range got.Spans {
		parent := ""
		for _, r := range s.References {
			if r.RefType == "CHILD_OF" {
				parent = names[r.SpanID]
			}
		}
		tree = append(tree, parent+" > "+s.OperationName)
	}
	for _, edge := range []string{
		" > invoke_agent base",
		"invoke_agent base > turn 1", "invoke_agent base > turn 2", "invoke_agent base > grade",
		"turn 1 > chat script", "turn 1 > execute_tool read_file", "turn 1 > execute_tool list_files", "turn 2 > chat script",
		"grade > grade unchanged",
	} {
		if !slices.Contains(tree, edge) {
			t.Errorf("jaeger's tree lacks %q; it has %q", edge, tree)
		}
	}

	if strings.Contains(string(raw), leakToken) {
		t.Errorf("the secret reached jaeger:\n%s", raw)
	}
	if !strings.Contains(string(raw), secrets.Marker("LEAK_TOKEN")) {
		t.Error("no redaction marker in the trace: the content never reached it, and the check above proves nothing")
	}

	// Replaying the same log again gives the same IDs: the trace gains no
	// span of a new ID.
	if code, out, errOut := runCLI(t, "trace", "--file", export, "--otlp-endpoint", j.otlp, "--content"); code != 0 {
		t.Fatalf("second trace exited %d: %s%s", code, out, errOut)
	}
	// The command returns once its spans are exported, and Jaeger
	// stores what it receives before it answers: it keeps one span per
	// ID, so the same IDs replace the first copies.
	again, _, _ := j.trace(t, runTrace.String())
	if before, after := spanIDs(got), spanIDs(again); !equalSets(before, after) || len(again.Spans) != len(got.Spans) {
		t.Errorf("a second replay changed the trace:\nfirst  %d spans %v\nsecond %d spans %v", len(got.Spans), before, len(again.Spans), after)
	}
}

// checkJaegerTrace compares what Jaeger stored with the projection: every
// span of the run's trace, its parent, name, start, duration and
// attributes.
func checkJaegerTrace(t *testing.T, got jaegerTrace, want []spans.Span, trace spans.TraceID) {
	t.Helper()
	byID := map[string]jaegerSpan{}
	for _, s := range got.Spans {
		byID[s.SpanID] = s
	}
	n := 0
	for _, w := range want {
		if w.Trace != trace {
			continue
		}
		n++
		g, ok := byID[w.ID.String()]
		if !ok {
			t.Errorf("jaeger lacks span %s %q", w.ID, w.Name)
			continue
		}
		if g.TraceID != trace.String() || g.OperationName != w.Name {
			t.Errorf("span %s: trace %s name %q, want %s %q", w.ID, g.TraceID, g.OperationName, trace, w.Name)
		}
		parent := ""
		for _, r := range g.References {
			if r.RefType == "CHILD_OF" {
				parent = r.SpanID
			}
		}
		if wantParent := w.Parent.String(); (w.Parent.IsZero() && parent != "") || (!w.Parent.IsZero() && parent != wantParent) {
			t.Errorf("%q: parent %q, want %q", w.Name, parent, wantParent)
		}
		if g.StartTime != w.Start.UnixMicro() || g.Duration != w.End.Sub(w.Start).Microseconds() {
			t.Errorf("%q: start %d duration %dµs, want %d and %dµs (the facts' times)", w.Name, g.StartTime, g.Duration, w.Start.UnixMicro(), w.End.Sub(w.Start).Microseconds())
		}
		tags := map[string]any{}
		for _, tag := range g.Tags {
			tags[tag.Key] = tag.Value
		}
		for _, a := range w.Attrs {
			var wantV any
			switch a.Value.Type {
			case spans.TypeString:
				wantV = a.Value.Str
			case spans.TypeInt:
				wantV = float64(a.Value.Int) // JSON numbers
			case spans.TypeBool:
				wantV = a.Value.Bool
			default:
				if _, ok := tags[a.Key]; !ok {
					t.Errorf("%q: no tag %s", w.Name, a.Key)
				}
				continue
			}
			if tags[a.Key] != wantV {
				t.Errorf("%q: tag %s = %#v, want %#v", w.Name, a.Key, tags[a.Key], wantV)
			}
		}
	}
	if n != len(spanIDs(got)) {
		t.Errorf("jaeger holds %d distinct spans of the run, the projection %d", len(spanIDs(got)), n)
	}
}

func spanIDs(tr jaegerTrace) map[string]bool {
	m := map[string]bool{}
	for _, s := range tr.Spans {
		m[s.SpanID] = true
	}
	return m
}

func equalSets(a, b map[string]bool) bool {
	if len(a) != len(b) {
		return false
	}
	for k := range a {
		if !b[k] {
			return false
		}
	}
	return true
}

// With --follow the command keeps reading: the spans of what is
// committed reach the receiver while it runs, and an interrupt ends it
// cleanly.
func TestTraceFollowSendsSpansWhileItRuns(t *testing.T) {
	t.Parallel()
	j := startJaeger(t)
	store, export := tracedStore(t)
	var runTrace spans.TraceID
	for _, f := range exportedFacts(t, export) {
		if f.Kind() == events.KindRunRequested {
			runTrace = spans.TraceID(f.ID)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	followCtx, stop := context.WithCancel(ctx)
	var out, errOut strings.Builder
	done := make(chan int, 1)
	go func() {
		done <- run(followCtx, []string{"trace", "--store", store, "--follow", "--otlp-endpoint", j.otlp}, &out, &errOut)
	}()
	testutil.Until(ctx, t, "the followed run's spans reach jaeger", func() bool {
		tr, _, found := j.trace(t, runTrace.String())
		return found && len(tr.Spans) >= 8
	})
	select {
	case code := <-done:
		t.Fatalf("trace --follow ended by itself (exit %d): %s%s", code, out.String(), errOut.String())
	default:
	}
	stop()
	if code := <-done; code != 0 {
		t.Fatalf("an interrupted follow exited %d: %s", code, errOut.String())
	}
}
