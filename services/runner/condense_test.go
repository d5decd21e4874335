package runner_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/factline/factline/bus"
	"github.com/factline/factline/cases"
	"github.com/factline/factline/events"
	"github.com/factline/factline/fleet/fleettest"
)

// summaryPrompt is the summariser's prompt in these tests: a scripted
// model answers the summary from the turn's branch that matches it.
const summaryPrompt = "SUMMARISE THE RUN"

// codeScript finds a code in turn 1, fails the check in turn 2 and, in
// turn 3, passes it only when its request still holds the code (the
// summary is asked for before turn 3 and answered by its first branch).
func codeScript(summary string) string {
	return fmt.Sprintf(`turns:
  - calls:
      - {id: r, name: run_command, args: {command: "echo the code is 7391"}}
    usage: {input_tokens: 100, output_tokens: 10, cost: 2}
    reserve: 3
  - calls:
      - {id: w, name: write_file, args: {path: answer.txt, content: "5\n"}}
      - {id: c, name: run_command, args: {command: ./check.sh}}
    usage: {input_tokens: 120, output_tokens: 12, cost: 2}
    reserve: 3
  - text: I lost the code
    usage: {input_tokens: 130, output_tokens: 5, cost: 2}
    reserve: 3
    branches:
      - request_contains: %q
        text: %q
        usage: {input_tokens: 60, output_tokens: 15, cost: 1}
        reserve: 2
      - request_contains: "7391"
        text: the code is still known
        calls:
          - {id: w, name: write_file, args: {path: answer.txt, content: "4\n"}}
          - {id: c, name: run_command, args: {command: ./check.sh}}
          - {id: done, name: task_complete, args: {status: done, evidence: [t3/c]}}
        usage: {input_tokens: 140, output_tokens: 14, cost: 2}
        reserve: 3
`, summaryPrompt, summary)
}

// withContext is a scripted treatment under a context policy (YAML).
func withContext(t *testing.T, policy, script string) *cases.Treatment {
	t.Helper()
	tr, err := cases.ParseTreatment("t.yaml", []byte("id: scripted\nmodel: {provider: scripted, scripts: x}\ncontext: "+policy+"\n"))
	must(t, err)
	tr.Model.ScriptFiles = map[string]string{"fix": script}
	return tr
}

const summarisePolicy = `{mode: summarise, summarise: {trigger_turns: 1, keep_last: 1, prompt: "` + summaryPrompt + `"}}`

func (e *env) runUnder(c *cases.Case, tr *cases.Treatment, run string) (bus.RunLog, events.RunEnded) {
	e.t.Helper()
	p, err := fleettest.Publish(e.ctx, e.b, c, tr)
	must(e.t, err)
	must(e.t, fleettest.Request(e.ctx, e.b, "suite", run, p, 1))
	log, end, err := fleettest.WaitEnded(e.ctx, e.b, "suite", run)
	must(e.t, err)
	return log, end
}

// reply is the text the model replied in turn n.
func reply(log bus.RunLog, n uint32) string {
	for _, f := range kinds(log, events.KindModelReplied) {
		if r := f.Body.(events.ModelReplied); r.Turn == n {
			return r.Text
		}
	}
	return ""
}

// request is the request blob turn n of a run was sent.
func (e *env) request(log bus.RunLog, n uint32) string {
	e.t.Helper()
	for _, f := range kinds(log, events.KindTurnStarted) {
		if s := f.Body.(events.TurnStarted); s.Turn == n {
			b, err := e.b.Blobs().Get(e.ctx, s.ContextDigest)
			must(e.t, err)
			return string(b)
		}
	}
	e.t.Fatalf("no turn %d", n)
	return ""
}

// An early fact the agent still needs survives through the summary: the
// scripted summariser keeps it, the summary is committed before the turn
// that sees it, and that turn's request holds it where turn 1 was. The
// summary is charged to the run and its request kept. Under a window of
// one turn the same fact is dropped and the run does not pass.
func TestAnEarlyFactSurvivesThroughTheSummary(t *testing.T) {
	t.Parallel()
	e := start(t)
	const summary = "turn 1 found the code 7391 (evidence t1/r)"
	log, end := e.runUnder(fixtureCase(t, "{steps: 6, cost: 30}"), withContext(t, summarisePolicy, codeScript(summary)), "summarised")
	if end.Status != events.RunDone {
		t.Fatalf("ended %s/%q", end.Status, end.Reason)
	}
	sums := kinds(log, events.KindContextSummarised)
	if len(sums) != 1 {
		t.Fatalf("%d summaries, want 1", len(sums))
	}
	s := sums[0].Body.(events.ContextSummarised)
	if s.Turn != 3 || s.From != 1 || s.Through != 1 || s.Summary != summary || s.Usage == nil || s.Usage.InputTokens != 60 {
		t.Fatalf("summary %+v", s)
	}
	// Committed before the turn that uses it.
	var started3 uint64
	for _, f := range kinds(log, events.KindTurnStarted) {
		if f.Body.(events.TurnStarted).Turn == 3 {
			started3 = f.Position
		}
	}
	if sums[0].Position > started3 {
		t.Fatalf("the summary (position %d) came after turn 3 started (%d)", sums[0].Position, started3)
	}
	req, err := e.b.Blobs().Get(e.ctx, s.RequestDigest)
	must(t, err)
	if !strings.Contains(string(req), summaryPrompt) || !strings.Contains(string(req), "the code is 7391") {
		t.Fatalf("the summary's stored request: %s", req)
	}
	third := e.request(log, 3)
	if !strings.Contains(third, "[summary of turns 1-1] "+summary) || strings.Contains(third, "echo the code is 7391") {
		t.Fatalf("turn 3's request: %s", third)
	}
	// Charged: the turns' 2+2+2 and the summary's 1.
	if end.Spent.Cost == nil || *end.Spent.Cost != 7 || end.Steps != 3 {
		t.Fatalf("spent %+v after %d steps, want cost 7 after 3", end.Spent, end.Steps)
	}

	if got := reply(log, 3); got != "the code is still known" {
		t.Fatalf("turn 3 answered %q: its request lost the code", got)
	}
	wlog, _ := e.runUnder(fixtureCase(t, "{steps: 6, cost: 30}"), withContext(t, "{mode: window, window_turns: 1}", codeScript(summary)), "windowed")
	if got := reply(wlog, 3); got != "I lost the code" || strings.Contains(e.request(wlog, 3), "7391") {
		t.Fatalf("a window of one turn kept the early fact (turn 3 answered %q): the test proves nothing", got)
	}
}

// A context budget too small even for what is left once summarised ends
// the run exhausted, naming the context budget: the summary was made and
// charged, and nothing it must keep was dropped in silence.
func TestABudgetTooSmallEvenSummarisedEndsExhausted(t *testing.T) {
	t.Parallel()
	e := start(t)
	ref, _ := e.runUnder(fixtureCase(t, "{steps: 6, cost: 30}"), withContext(t, summarisePolicy, codeScript("short")), "reference")
	var second uint64
	for _, f := range kinds(ref, events.KindTurnStarted) {
		if s := f.Body.(events.TurnStarted); s.Turn == 2 {
			second = s.Tokens
		}
	}
	// Turn 2's context fits; turn 3's, with a long summary, cannot.
	policy := fmt.Sprintf(`{mode: summarise, max_tokens: %d, summarise: {trigger_turns: 1, keep_last: 1, prompt: "%s"}}`, second, summaryPrompt)
	log, end := e.runUnder(fixtureCase(t, "{steps: 6, cost: 30}"), withContext(t, policy, codeScript(strings.Repeat("the code is 7391. ", 200))), "toosmall")
	if end.Status != events.RunExhausted || !strings.HasPrefix(end.Reason, "context_budget: ") || !strings.Contains(end.Reason, "summarise") {
		t.Fatalf("ended %s/%q, want exhausted for the context budget", end.Status, end.Reason)
	}
	if n := len(kinds(log, events.KindContextSummarised)); n != 1 {
		t.Fatalf("%d summaries before the end, want 1", n)
	}
	if end.Steps != 2 || end.Spent.Cost == nil || *end.Spent.Cost != 5 {
		t.Fatalf("spent %+v after %d steps, want cost 5 (two turns and the summary) after 2", end.Spent, end.Steps)
	}
}

// A summary is a model call the budget must allow like a turn's: one whose
// reserve (4 here) no longer fits the cost left (3, where turn 3's reserve
// would fit) ends the run exhausted before it is asked, and no summary is
// committed.
func TestASummaryTheBudgetCannotPayForEndsExhausted(t *testing.T) {
	t.Parallel()
	e := start(t)
	script := strings.Replace(codeScript("s"), "reserve: 2", "reserve: 4", 1)
	if !strings.Contains(script, "reserve: 4") {
		t.Fatal("the summary's reserve was not raised")
	}
	log, end := e.runUnder(fixtureCase(t, "{steps: 6, cost: 7}"), withContext(t, summarisePolicy, script), "nosummary")
	if end.Status != events.RunExhausted || end.Reason != "budget_preflight" || end.Steps != 2 {
		t.Fatalf("ended %s/%q after %d steps, want exhausted/budget_preflight after 2", end.Status, end.Reason, end.Steps)
	}
	if n := len(kinds(log, events.KindContextSummarised)); n != 0 {
		t.Fatalf("%d summaries committed past the budget", n)
	}
}
