package view_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/factline/factline/bus/bustest"
)

// repliesSuite writes a suite of the demo's read-only case under two
// scripted treatments: "quiet" answers at once with no tool call; "broken"
// reads a file, then its model fails, and the run ends errored with its
// second turn never answered.
func repliesSuite(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	files := map[string]string{
		"suite.yaml": "name: replies\ncases:\n  - {path: cases/read-only/case.yaml}\n" +
			"treatments:\n  - {path: treatments/quiet.yaml}\n  - {path: treatments/broken.yaml}\ntrials: 1\n",
		"treatments/quiet.yaml":  "id: quiet\nmodel: {provider: scripted, scripts: ../quiet}\n",
		"treatments/broken.yaml": "id: broken\nmodel: {provider: scripted, scripts: ../broken}\n",
		"quiet/read-only.yaml":   "turns:\n  - text: Release 2.4 uses port 9090 by default.\n",
		"broken/read-only.yaml":  "turns:\n  - calls: [{id: read, name: read_file, args: {path: NOTES.md}}]\n  - error: unavailable\n",
	}
	for _, src := range []string{"cases/read-only/case.yaml", "cases/read-only/fixture/NOTES.md"} {
		b, err := os.ReadFile(filepath.Join("../examples/demo", src))
		if err != nil {
			t.Fatal(err)
		}
		files[src] = string(b)
	}
	for name, text := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return filepath.Join(dir, "suite.yaml")
}

// turnHTML is the section of a run page for one turn.
func turnHTML(t *testing.T, page string, turn string) string {
	t.Helper()
	m := regexp.MustCompile(`(?s)<section class="turn" id="turn-` + turn + `">.*?</section>`).FindString(page)
	if m == "" {
		t.Fatalf("the page has no turn %s:\n%s", turn, page)
	}
	return m
}

// A reply with no tool call is shown as such on the run's page; a turn
// whose reply never came says, once the run has ended, that it never
// will, and why, instead of "no reply yet".
func TestTheRunPageSaysWhatAQuietReplyAndAnUnansweredTurnWere(t *testing.T) {
	ctx := testCtx(t)
	b, _ := bustest.Start(t)
	if err := runSuite(ctx, b, repliesSuite(t), t.TempDir()); err != nil {
		t.Fatal(err)
	}
	_, h := serveCaughtUp(t, ctx, b)

	_, quiet := get(t, h.URL+"/suites/replies/runs/read-only-quiet-t1")
	if turn := turnHTML(t, quiet, "1"); !strings.Contains(turn, "the model made no tool call") {
		t.Errorf("the quiet run's turn 1 does not say the model made no tool call:\n%s", turn)
	}
	_, api := get(t, h.URL+"/api/suites/replies/runs/read-only-quiet-t1")
	if !strings.Contains(api, `"no_tool_call": true`) {
		t.Errorf("the page data does not mark the reply with no tool call:\n%s", api)
	}

	_, broken := get(t, h.URL+"/suites/replies/runs/read-only-broken-t1")
	if !strings.Contains(broken, "ended <strong class=\"status-errored\">errored</strong>") {
		t.Fatalf("the broken run did not end errored:\n%s", broken)
	}
	if turn := turnHTML(t, broken, "1"); strings.Contains(turn, "the model made no tool call") {
		t.Errorf("turn 1 made a call, and the page says it made none:\n%s", turn)
	}
	turn := turnHTML(t, broken, "2")
	if strings.Contains(turn, "no reply yet") {
		t.Errorf("the errored run's last turn still waits for a reply:\n%s", turn)
	}
	if !strings.Contains(turn, "no reply: the run ended errored") || !strings.Contains(turn, "model_error") {
		t.Errorf("the errored run's last turn does not say it ended without a reply, and why:\n%s", turn)
	}
}
