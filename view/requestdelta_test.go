package view_test

import (
	"net/http"
	"strings"
	"testing"
)

// A run's page shows what the model received each turn, and each turn's
// request repeats every message of the one before (the system prompt, the
// task, every earlier output): shown whole, the page grew with the square
// of the turns (300 turns of 200 kB outputs made 775 MB of HTML and a
// viewer of 4 GB). A turn shows only the messages that differ from the
// previous turn's request, says how many it leaves out, and links the
// exact bytes, so the system prompt appears once however many turns ran.
func TestARunPageShowsEachRequestOnlyWhereItDiffersFromThePrevious(t *testing.T) {
	ctx := testCtx(t)
	_, h := serveCaughtUp(t, ctx, demo(t))
	status, body := get(t, h.URL+"/suites/demo/runs/misread-stall-off-t1")
	if status != http.StatusOK {
		t.Fatalf("status %d", status)
	}
	turns := strings.Count(body, `<section class="turn"`)
	if turns < 3 {
		t.Fatalf("the run has %d turns; the test needs a run of several", turns)
	}
	if n := strings.Count(body, "You are an agent working in a workspace directory"); n != 1 {
		t.Errorf("the system prompt is on the page %d times over %d turns, want once", n, turns)
	}
	if n := strings.Count(body, "exact bytes</a>"); n != turns {
		t.Errorf("%d links to a request's exact bytes over %d turns, want one each", n, turns)
	}
	if n := strings.Count(body, `data-field="request-same"`); n != turns-1 {
		t.Errorf("%d turns say which messages they leave out, want %d (all but the first)", n, turns-1)
	}
	if !strings.Contains(body, "as turn 1 received them") {
		t.Errorf("turn 2 does not say it leaves out what turn 1 received:\n%.2000s", body)
	}
}
