package spans_test

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/factline/factline/events"
	"github.com/factline/factline/projections/spans"
)

// byName indexes spans by name, the second of a name as "NAME #2" and
// so on, in the order they were emitted.
func byName(t *testing.T, ss []spans.Span) map[string]spans.Span {
	t.Helper()
	m := map[string]spans.Span{}
	for _, s := range ss {
		name := s.Name
		for n := 2; ; n++ {
			if _, dup := m[name]; !dup {
				break
			}
			name = fmt.Sprintf("%s #%d", s.Name, n)
		}
		m[name] = s
	}
	return m
}

func str(t *testing.T, s spans.Span, key string) string {
	t.Helper()
	v, ok := s.Attr(key)
	if !ok {
		t.Fatalf("span %q has no %s (has %v)", s.Name, key, keys(s))
	}
	if v.Type != spans.TypeString {
		t.Fatalf("span %q: %s is not a string: %+v", s.Name, key, v)
	}
	return v.Str
}

func num(t *testing.T, s spans.Span, key string) int64 {
	t.Helper()
	v, ok := s.Attr(key)
	if !ok || v.Type != spans.TypeInt {
		t.Fatalf("span %q: %s is no int: %+v (has %v)", s.Name, key, v, keys(s))
	}
	return v.Int
}

func keys(s spans.Span) []string {
	var k []string
	for _, a := range s.Attrs {
		k = append(k, a.Key)
	}
	return k
}

func TestARunIsATreeOfSpansTimedByItsFacts(t *testing.T) {
	l := fullRun(t)
	got := byName(t, spans.Project(l.facts, spans.Options{}))
	run := got["invoke_agent base"]
	type want struct {
		name, parent string
		start, end   int // fact indexes in fullRun
	}
	for _, w := range []want{
		{"invoke_agent base", "", 1, 15},
		{"turn 1", "invoke_agent base", 3, 9},
		{"chat gpt-4.1-mini", "turn 1", 3, 4},
		{"execute_tool read_file", "turn 1", 5, 6},
		{"turn 2", "invoke_agent base", 10, 14},
		{"chat gpt-4.1-mini #2", "turn 2", 10, 11},
		{"grade", "invoke_agent base", 16, 19},
		{"grade tests", "grade", 16, 17},
		{"grade lint", "grade", 17, 18},
	} {
		s, ok := got[w.name]
		if !ok {
			t.Errorf("no span %q (have %v)", w.name, slices.Sorted(mapKeys(got)))
			continue
		}
		if s.Trace != run.Trace {
			t.Errorf("%s: trace %s, want the run's %s", w.name, s.Trace, run.Trace)
		}
		wantParent := spans.SpanID{}
		if w.parent != "" {
			wantParent = got[w.parent].ID
		}
		if s.Parent != wantParent {
			t.Errorf("%s: parent %s, want %q's %s", w.name, s.Parent, w.parent, wantParent)
		}
		if !s.Start.Equal(at(w.start)) || !s.End.Equal(at(w.end)) {
			t.Errorf("%s: %v..%v, want facts %d..%d (%v..%v)", w.name, s.Start, s.End, w.start, w.end, at(w.start), at(w.end))
		}
	}
	if run.Trace != spans.TraceID(l.facts[1].ID) {
		t.Errorf("the run's trace ID %s is not its run.requested's ID %s", run.Trace, l.facts[1].ID)
	}
	suite := got["suite s1"]
	if !suite.Parent.IsZero() || suite.Trace != spans.TraceID(l.facts[0].ID) || !suite.Start.Equal(at(0)) || !suite.End.Equal(at(20)) {
		t.Errorf("suite span: %+v", suite)
	}
	if len(run.Links) != 1 || run.Links[0].Trace != suite.Trace || run.Links[0].Span != suite.ID {
		t.Errorf("the run does not link to its suite: %+v", run.Links)
	}
}

func mapKeys[V any](m map[string]V) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

func TestTheSameLogGivesTheSameSpans(t *testing.T) {
	l := fullRun(t)
	a := spans.Project(l.facts, spans.Options{Content: true})
	b := spans.Project(l.facts, spans.Options{Content: true})
	if !reflect.DeepEqual(a, b) {
		t.Fatal("two projections of one log differ")
	}
	seen := map[spans.SpanID]string{}
	for _, s := range a {
		if prev, dup := seen[s.ID]; dup {
			t.Errorf("span ID %s of %q is also %q's", s.ID, s.Name, prev)
		}
		seen[s.ID] = s.Name
		if s.ID.IsZero() {
			t.Errorf("%q has the zero span ID", s.Name)
		}
	}
	if len(a) != 10 {
		t.Errorf("%d spans, want 10", len(a))
	}
}

func TestIDsComeFromFactIDsNotFromOrderOrTime(t *testing.T) {
	// Two different logs of the same shape (fresh fact IDs, same times)
	// give different IDs: the IDs are the facts', not a counter's.
	a := spans.Project(fullRun(t).facts, spans.Options{})
	b := spans.Project(fullRun(t).facts, spans.Options{})
	for i := range a {
		if a[i].ID == b[i].ID || a[i].Trace == b[i].Trace {
			t.Errorf("%q: same ID in two logs with different fact IDs", a[i].Name)
		}
	}
}

func TestModelCallFollowsGenAIConventions(t *testing.T) {
	for _, tc := range []struct {
		name, provider, system string
		usage                  *events.Usage
		finish                 string
	}{
		{"known usage", "openai", "openai", &events.Usage{InputTokens: 120, OutputTokens: 7, CachedInputTokens: u64(100)}, "stop"},
		{"responses API is openai", "openai-responses", "openai", &events.Usage{InputTokens: 1, OutputTokens: 2}, "stop"},
		{"anthropic", "anthropic", "anthropic", &events.Usage{InputTokens: 3, OutputTokens: 4}, "end_turn"},
		{"scripted is factline's own", "scripted", "factline.scripted", nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := newLog(t)
			l.requested("r1")
			l.turnStarted("r1", 1)
			l.runner("r1", events.ModelReplied{Turn: 1, Provider: tc.provider, Model: "m-1", Usage: tc.usage, Finish: tc.finish})
			s := byName(t, spans.Project(l.facts, spans.Options{}))["chat m-1"]
			if s.Kind != spans.KindClient {
				t.Errorf("kind %v, want client", s.Kind)
			}
			if got := str(t, s, "gen_ai.operation.name"); got != "chat" {
				t.Errorf("operation %q", got)
			}
			if str(t, s, "gen_ai.provider.name") != tc.system || str(t, s, "gen_ai.system") != tc.system {
				t.Errorf("provider %q / system %q, want %q", str(t, s, "gen_ai.provider.name"), str(t, s, "gen_ai.system"), tc.system)
			}
			if str(t, s, "gen_ai.request.model") != "m-1" || str(t, s, "factline.model.provider") != tc.provider {
				t.Errorf("model attributes: %+v", s.Attrs)
			}
			if tc.usage == nil {
				// Unknown usage stays unknown: no attribute, never a zero.
				for _, k := range []string{"gen_ai.usage.input_tokens", "gen_ai.usage.output_tokens"} {
					if v, ok := s.Attr(k); ok {
						t.Errorf("unknown usage became %s = %+v", k, v)
					}
				}
			} else if num(t, s, "gen_ai.usage.input_tokens") != int64(tc.usage.InputTokens) || num(t, s, "gen_ai.usage.output_tokens") != int64(tc.usage.OutputTokens) {
				t.Errorf("usage attributes %+v, want %+v", s.Attrs, tc.usage)
			}
			v, ok := s.Attr("gen_ai.response.finish_reasons")
			if tc.finish == "" && ok {
				t.Errorf("no finish reason became %+v", v)
			}
			if tc.finish != "" && (!ok || !slices.Equal(v.Strings, []string{tc.finish})) {
				t.Errorf("finish reasons %+v, want [%s]", v, tc.finish)
			}
		})
	}
}

func TestDispatchCarriesEffectClassAndOutcome(t *testing.T) {
	for _, tc := range []struct {
		name        string
		effect      events.EffectClass
		disposition events.Disposition
		recorded    string
		err         *events.ToolError
		outcome     string // "" for no attribute
		failed      bool
	}{
		{"a read has no outcome", events.EffectRead, events.DispositionExecuted, "", nil, "", false},
		{"an external effect's recorded outcome", events.EffectExternal, events.DispositionExecuted, "applied", nil, "applied", false},
		{"an unknown outcome is an error", events.EffectIrreversible, events.DispositionExecuted, "unknown", &events.ToolError{Code: "LOST"}, "unknown", true},
		{"an old fact's outcome is inferred: executed without error applied", events.EffectExternal, events.DispositionExecuted, "", nil, "applied", false},
		{"an old fact's outcome is inferred: rejected did not apply", events.EffectExternal, events.DispositionRejected, "", nil, "not_applied", false},
		{"an old fact's outcome is inferred: HTTP_STATUS did not apply", events.EffectExternal, events.DispositionExecuted, "", &events.ToolError{Code: "HTTP_STATUS"}, "not_applied", true},
		{"an old fact's outcome is inferred: anything else is unknown", events.EffectExternal, events.DispositionCanceled, "", nil, "unknown", false},
		{"a tool error fails the span", events.EffectWrite, events.DispositionExecuted, "", &events.ToolError{Code: "PATH_OUTSIDE"}, "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := newLog(t)
			l.requested("r1")
			l.turnStarted("r1", 1)
			l.replied("r1", 1, "", nil, call("c1", "tool_x", `{}`))
			l.intended("r1", 1, "c1", "tool_x", tc.effect)
			l.completed("r1", 1, "c1", "tool_x", "out", tc.disposition, tc.recorded, tc.err)
			s := byName(t, spans.Project(l.facts, spans.Options{}))["execute_tool tool_x"]
			if str(t, s, "gen_ai.operation.name") != "execute_tool" || str(t, s, "gen_ai.tool.name") != "tool_x" || str(t, s, "gen_ai.tool.call.id") != "c1" {
				t.Errorf("GenAI tool attributes: %+v", s.Attrs)
			}
			if str(t, s, "factline.tool.effect") != string(tc.effect) || str(t, s, "factline.dispatch.disposition") != string(tc.disposition) {
				t.Errorf("effect/disposition: %+v", s.Attrs)
			}
			v, ok := s.Attr("factline.dispatch.outcome")
			if (tc.outcome == "") == ok || v.Str != tc.outcome {
				t.Errorf("outcome %+v (present %v), want %q", v, ok, tc.outcome)
			}
			if (s.Status == spans.StatusError) != tc.failed {
				t.Errorf("status %v %q, want failed=%v", s.Status, s.StatusMessage, tc.failed)
			}
			if tc.err != nil && str(t, s, "error.type") != tc.err.Code {
				t.Errorf("error.type %q, want %q", str(t, s, "error.type"), tc.err.Code)
			}
		})
	}
}

func TestInstrumentSpansCarryOutcomeAndRequirement(t *testing.T) {
	got := byName(t, spans.Project(fullRun(t).facts, spans.Options{}))
	for name, want := range map[string]struct {
		outcome  string
		required bool
	}{"grade tests": {"passed", true}, "grade lint": {"failed", false}} {
		s := got[name]
		if str(t, s, "factline.grade.outcome") != want.outcome {
			t.Errorf("%s: outcome %q", name, str(t, s, "factline.grade.outcome"))
		}
		if v, _ := s.Attr("factline.grade.required"); v.Bool != want.required {
			t.Errorf("%s: required %v", name, v.Bool)
		}
	}
	if str(t, got["grade"], "factline.grade.result") != "passed" || num(t, got["grade"], "factline.grade.revision") != 1 {
		t.Errorf("grade span: %+v", got["grade"].Attrs)
	}
	if got["grade lint"].Status != spans.StatusUnset {
		t.Error("a failed check is the agent's failure, not the grader's: the span must not be an error")
	}
}

func TestRunSpanCarriesTheEnding(t *testing.T) {
	got := byName(t, spans.Project(fullRun(t).facts, spans.Options{}))
	run := got["invoke_agent base"]
	for k, v := range map[string]string{
		"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "base", "factline.suite": "s1", "factline.run": "r1",
		"factline.case": "fix-sum", "factline.run.status": "done", "factline.run.reason": "because",
	} {
		if got := str(t, run, k); got != v {
			t.Errorf("%s = %q, want %q", k, got, v)
		}
	}
	if num(t, run, "factline.spent.tokens") != 170 || num(t, run, "factline.trial") != 1 {
		t.Errorf("spend/trial: %+v", run.Attrs)
	}
	var names []string
	for _, e := range run.Events {
		names = append(names, e.Name)
	}
	if !slices.Equal(names, []string{"run.claimed"}) || !run.Events[0].At.Equal(at(2)) {
		t.Errorf("run events %v", run.Events)
	}
	turn := got["turn 1"]
	if str(t, turn, "factline.stop.result") != "continue" || str(t, turn, "factline.actor_intent") != "continue" {
		t.Errorf("turn 1: %+v", turn.Attrs)
	}
	if str(t, got["turn 2"], "factline.stop.result") != "finish" || str(t, got["turn 2"], "factline.stop.status") != "done" {
		t.Errorf("turn 2: %+v", got["turn 2"].Attrs)
	}
}

func TestAnErroredRunIsAnErrorSpan(t *testing.T) {
	l := newLog(t)
	l.requested("r1")
	l.ended("r1", events.RunErrored)
	s := byName(t, spans.Project(l.facts, spans.Options{}))["invoke_agent base"]
	if s.Status != spans.StatusError || s.StatusMessage != "because" {
		t.Errorf("status %v %q", s.Status, s.StatusMessage)
	}
}

func TestSpansAreEmittedOnceWhenTheirLastFactArrives(t *testing.T) {
	l := fullRun(t)
	p := spans.New(spans.Options{})
	var all []spans.Span
	for i, f := range l.facts {
		out := p.Apply(f)
		for _, s := range out {
			if s.End.After(f.At) {
				t.Errorf("fact %d emitted %q ending later, at %v", i, s.Name, s.End)
			}
		}
		all = append(all, out...)
	}
	if rest := p.Flush(); len(rest) != 0 {
		t.Errorf("a finished log left open spans: %v", rest)
	}
	if !reflect.DeepEqual(all, spans.Project(l.facts, spans.Options{})) {
		t.Error("fact-by-fact emission differs from the whole projection")
	}
}

func TestARunInFlightIsFlushedMarkedOpen(t *testing.T) {
	l := newLog(t)
	l.requested("r1")
	l.claimed("r1")
	l.turnStarted("r1", 1)
	p := spans.New(spans.Options{})
	for _, f := range l.facts {
		if out := p.Apply(f); len(out) != 0 {
			t.Fatalf("an unfinished run emitted %v", out)
		}
	}
	got := byName(t, p.Flush())
	for _, name := range []string{"invoke_agent base", "turn 1", "chat"} {
		s, ok := got[name]
		if !ok {
			t.Errorf("no open span %q (have %v)", name, slices.Sorted(mapKeys(got)))
			continue
		}
		if v, _ := s.Attr("factline.open"); !v.Bool {
			t.Errorf("%s is not marked open", name)
		}
		if !s.End.Equal(at(2)) {
			t.Errorf("%s ends at %v, want the run's last fact %v", name, s.End, at(2))
		}
	}
}

func TestContentIsLeftOutUnlessAsked(t *testing.T) {
	l := fullRun(t)
	for _, content := range []bool{false, true} {
		var text strings.Builder
		for _, s := range spans.Project(l.facts, spans.Options{Content: content}) {
			text.WriteString(allText(s))
		}
		for _, c := range []string{"let me look", `sum.py`, "def sum"} {
			if strings.Contains(text.String(), c) != content {
				t.Errorf("content=%v: %q in spans = %v", content, c, !content)
			}
		}
	}
}

// allText is every string a span carries, as an exporter would send it.
func allText(s spans.Span) string {
	var b strings.Builder
	b.WriteString(s.Name + "\n" + s.StatusMessage + "\n")
	attrs := func(as []spans.Attr) {
		for _, a := range as {
			b.WriteString(a.Key + "=" + a.Value.Str + strings.Join(a.Value.Strings, ",") + "\n")
		}
	}
	attrs(s.Attrs)
	for _, e := range s.Events {
		b.WriteString(e.Name + "\n")
		attrs(e.Attrs)
	}
	for _, l := range s.Links {
		attrs(l.Attrs)
	}
	return b.String()
}

func TestRedactCoversEveryString(t *testing.T) {
	const secret = "hunter2-secret-value"
	l := newLog(t)
	l.requested("r1")
	l.turnStarted("r1", 1)
	l.replied("r1", 1, "the key is "+secret, nil, call("c1", "http_call", `{"token":"`+secret+`"}`))
	l.intended("r1", 1, "c1", "http_call", events.EffectExternal)
	l.completed("r1", 1, "c1", "http_call", "echo "+secret, events.DispositionExecuted, "applied",
		&events.ToolError{Code: "HTTP_STATUS", Message: "401 for " + secret})
	l.runner("r1", events.RunEnded{Status: events.RunErrored, Reason: "harness: " + secret})
	redact := func(s string) string { return strings.ReplaceAll(s, secret, "[redacted:K]") }
	out := spans.Project(l.facts, spans.Options{Content: true, Redact: redact})
	var text strings.Builder
	for _, s := range out {
		text.WriteString(allText(s))
	}
	if strings.Contains(text.String(), secret) {
		t.Errorf("a secret reached a span:\n%s", text.String())
	}
	if !strings.Contains(text.String(), "[redacted:K]") {
		t.Error("the content never reached the spans: the test proves nothing")
	}
}

func TestSummaryIsAModelCallOfTheRun(t *testing.T) {
	l := newLog(t)
	l.requested("r1")
	l.claimed("r1")
	l.runner("r1", events.ContextSummarised{Turn: 3, From: 1, Through: 2, RequestDigest: digest("req"), Provider: "openai", Model: "m-s",
		Usage: &events.Usage{InputTokens: 900, OutputTokens: 40}})
	got := byName(t, spans.Project(l.facts, spans.Options{}))
	s, run := got["chat m-s"], got["invoke_agent base"]
	if s.Parent != run.ID || !s.Start.Equal(at(1)) || !s.End.Equal(at(2)) {
		t.Errorf("summary span %+v", s)
	}
	if str(t, s, "factline.model.purpose") != "summary" || num(t, s, "gen_ai.usage.input_tokens") != 900 {
		t.Errorf("summary attributes %+v", s.Attrs)
	}
}

func TestARunSeenFromItsMiddleIsMarkedPartial(t *testing.T) {
	l := fullRun(t)
	got := byName(t, spans.Project(l.facts[3:16], spans.Options{}))
	run, ok := got["invoke_agent"]
	if !ok {
		t.Fatalf("no run span (have %v)", slices.Sorted(mapKeys(got)))
	}
	if v, _ := run.Attr("factline.partial"); !v.Bool || run.Trace != spans.TraceID(l.facts[3].ID) {
		t.Errorf("partial run: %+v", run)
	}
	if got["turn 1"].Trace != run.Trace || got["turn 1"].Parent != run.ID {
		t.Error("the turns of a partial run are not in its trace")
	}
	_ = time.Second
}
