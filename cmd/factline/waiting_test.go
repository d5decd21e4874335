package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/factline/factline/internal/testutil"
)

// A local run whose call waits for a person's approval says so on its
// progress, with the exact command that answers it: the run, the
// operation and the digest of the arguments its dispatch.intended
// recorded, and the store the command reaches.
func TestALocalRunSaysWhichRunWaitsForYouAndHow(t *testing.T) {
	t.Parallel()
	suite := approvalSuite(t, "waits", "Paid.")
	store := t.TempDir()
	var out, errOut testutil.LogBuffer
	cancel, done := startRun(t, &out, &errOut, suite, "--store", store, "--fsync", "interval")
	m := waitForApprovalCommand(t, &out, &errOut, done)
	said := out.String()
	if !strings.Contains(said, "run pay-t-t1 waits for you") || !strings.Contains(said, "factline reject pay-t-t1 "+m[1]) {
		t.Errorf("the note does not say the run waits and how to reject:\n%s", said)
	}
	if !strings.Contains(said, "1 run waits for you: factline approve pay-t-t1") {
		t.Errorf("the progress line does not say a run waits, with the command:\n%s", said)
	}
	abs, _ := filepath.Abs(store)
	if m[3] != abs {
		t.Errorf("the command reaches --store %s, want %s", m[3], abs)
	}
	cancel()
	if code := <-done; code != 1 {
		t.Fatalf("the interrupted run exited %d", code)
	}
	// The command names what the log recorded for the call.
	code, intended, errText := runCLI(t, "tail", "--store", store, "--since", "start", "--no-follow", "--kind", "dispatch.intended", "--json")
	if code != 0 {
		t.Fatalf("tail: %d %s", code, errText)
	}
	for _, want := range []string{`"operation_id":"` + m[1] + `"`, `"args_digest":"` + m[2] + `"`} {
		if !strings.Contains(intended, want) {
			t.Errorf("the recorded dispatch.intended lacks %s:\n%s", want, intended)
		}
	}
}

// A run waiting for a resolution is said once, with both findings; a fact
// of the run committed after it began to wait, or a status that moved on,
// ends the wait; facts from before do not.
func TestWaitingFollowsTheRunnersStatusAndTheFactsAfterIt(t *testing.T) {
	t.Parallel()
	w := newWaiting("--store /tmp/fl")
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	note := w.status("r1", liveStatus{Phase: phaseAwaitingResolution, Operation: "r1/2/call-1", At: t0})
	for _, want := range []string{"run r1 waits for you", "unknown", "factline resolve r1 r1/2/call-1 --applied --store /tmp/fl",
		"factline resolve r1 r1/2/call-1 --not-applied --store /tmp/fl"} {
		if !strings.Contains(note, want) {
			t.Errorf("the note %q lacks %q", note, want)
		}
	}
	if again := w.status("r1", liveStatus{Phase: phaseAwaitingResolution, Operation: "r1/2/call-1", At: t0}); again != "" {
		t.Errorf("the same wait said twice: %q", again)
	}
	if s := w.summary(true); !strings.Contains(s, "1 run waits for you: factline resolve r1 r1/2/call-1 --applied --store /tmp/fl") {
		t.Errorf("summary %q", s)
	}
	if s := w.summary(false); strings.Contains(s, "factline resolve") || !strings.Contains(s, "1 run waits for you") {
		t.Errorf("a terminal's summary %q must stay short", s)
	}
	w.fact("r1", t0.Add(-time.Second)) // the intent, committed before the wait
	if w.count() != 1 {
		t.Fatal("a fact from before the wait ended it")
	}
	w.fact("r1", t0.Add(time.Second)) // control.accepted: resolved
	if w.count() != 0 || w.summary(true) != "" {
		t.Fatalf("the wait outlived the fact that ended it: %q", w.summary(true))
	}
	w.status("r2", liveStatus{Phase: phaseAwaitingApproval, Operation: "r2/1/pay", ArgsDigest: "sha256:ab", At: t0})
	w.status("r3", liveStatus{Phase: phaseAwaitingApproval, Operation: "r3/1/pay", ArgsDigest: "sha256:cd", At: t0})
	if s := w.summary(true); !strings.Contains(s, "2 runs wait for you (r2, r3") {
		t.Errorf("two waiting: %q", s)
	}
	w.status("r2", liveStatus{Phase: "turn", At: t0.Add(time.Second)})
	if w.count() != 1 {
		t.Fatalf("a status that moved on left %d waiting", w.count())
	}
}

// A local run whose call's answer was lost (an operation of unknown
// outcome) says so on its progress with the exact resolve command, and
// that command, pasted as printed, reaches the run: the run goes on to
// its report and the progress no longer says it waits.
func TestALocalRunSaysHowToResolveAnUnknownOutcomeAndTheCommandWorks(t *testing.T) {
	t.Parallel()
	// The sink takes the order and never answers in time: the call's
	// outcome is unknown, with no lookup and no deduplication to learn it.
	release := make(chan struct{})
	sink := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}))
	defer sink.Close()
	defer close(release)
	suite := writeSuite(t, map[string]string{
		"suite.yaml": "name: lost\ncases:\n  - {path: cases/pay/case.yaml}\ntreatments:\n  - {path: treatments/t.yaml}\ntrials: 1\n",
		"cases/pay/case.yaml": "id: pay\ninstruction: Pay the invoice.\nfixture: ../read-only/fixture\nbudget: {steps: 3}\n" +
			"tools: [http_call, task_complete]\nhttp: {allow: ['" + sink.URL + "/'], timeout: 300ms}\n",
		"treatments/t.yaml": "id: t\nmodel: {provider: scripted, scripts: ../scripts}\n",
		"scripts/pay.yaml":  "turns:\n  - calls: [{id: pay, name: http_call, args: {url: '" + sink.URL + "/pay', body: '{\"amount\": 5}'}}]\n  - text: Paid.\n",
	})
	store := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var out, errOut testutil.LogBuffer
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"run", suite, "--store", store, "--fsync", "interval"}, &out, &errOut)
	}()
	resolve := regexp.MustCompile(`factline resolve pay-t-t1 (\S+) --applied --store (\S+)`)
	var m []string
	for m == nil {
		if m = resolve.FindStringSubmatch(out.String()); m != nil {
			break
		}
		select {
		case code := <-done:
			t.Fatalf("run exited %d before saying the run waits:\n%s%s", code, out.String(), errOut.String())
		case <-ctx.Done():
			t.Fatalf("run never said the run waits for a resolution:\n%s", out.String())
		case <-time.After(50 * time.Millisecond):
		}
	}
	said := out.String()
	for _, want := range []string{"run pay-t-t1 waits for you: the outcome of operation " + m[1] + " is unknown",
		"factline resolve pay-t-t1 " + m[1] + " --not-applied --store " + m[2], "1 run waits for you: factline resolve pay-t-t1 " + m[1]} {
		if !strings.Contains(said, want) {
			t.Errorf("the progress lacks %q:\n%s", want, said)
		}
	}
	// The command as printed, from another process's point of view: it
	// attaches to the store this run holds.
	if code, o, e := runCLI(t, "resolve", "pay-t-t1", m[1], "--applied", "--store", m[2]); code != 0 {
		t.Fatalf("the printed resolve command: exit %d\n%s%s", code, o, e)
	}
	select {
	case code := <-done:
		if code != 0 {
			t.Fatalf("the resolved run exited %d:\n%s%s", code, out.String(), errOut.String())
		}
	case <-ctx.Done():
		t.Fatalf("the resolved run never reported:\n%s", out.String())
	}
	final := out.String()
	lines := regexp.MustCompile(`(?m)^runs: .*$`).FindAllString(final, -1)
	if len(lines) == 0 || strings.Contains(lines[len(lines)-1], "waits for you") {
		t.Errorf("the last progress line still says a run waits: %q", lines)
	}
	if !strings.Contains(final, "suite lost (split dev): 1 cases × 1 treatments × 1 trials, complete") {
		t.Errorf("no report after the resolution:\n%s", final)
	}
	// The person's finding settled the call, and the run went on to its
	// second turn and finished.
	code, rep, e := runCLI(t, "report", "lost", "--store", store, "--json")
	if code != 0 || !strings.Contains(rep, `"status": "done"`) {
		t.Fatalf("the report after the resolution: exit %d %s\n%s", code, e, rep)
	}
}

// A control signal about an operation the run cannot take is refused at
// once, saying why, and nothing is sent: an approval of other arguments
// (the runner would ignore it), an operation the run never intended (a
// typo). Before, each waited out --wait and said only that nothing
// accepted it, "is a runner on the run?", while a runner was.
func TestApproveOfTheWrongOperationOrArgumentsSaysWhy(t *testing.T) {
	t.Parallel()
	suite := approvalSuite(t, "wrongop", "Paid.")
	store := t.TempDir()
	var out, errOut testutil.LogBuffer
	_, done := startRun(t, &out, &errOut, suite, "--store", store, "--fsync", "interval")
	m := waitForApprovalCommand(t, &out, &errOut, done)
	op, digest := m[1], m[2]
	other := "sha256:" + strings.Repeat("0", 64)
	code, _, e := runCLI(t, "approve", "pay-t-t1", op, "--args-digest", other, "--wait", "3s", "--store", store)
	if code != 1 || !strings.Contains(e, "is not the digest of operation "+op+"'s arguments ("+digest+")") || !strings.Contains(e, "nothing was sent") {
		t.Errorf("approve of other arguments: exit %d, %q", code, e)
	}
	code, _, e = runCLI(t, "reject", "pay-t-t1", op+"x", "--wait", "3s", "--store", store)
	if code != 1 || !strings.Contains(e, `has no operation "`+op+`x"`) || !strings.Contains(e, "its operations in flight: "+op) {
		t.Errorf("reject of an operation the run never intended: exit %d, %q", code, e)
	}
	// The run still waits for its approval: neither signal reached it.
	code, o, e := runCLI(t, "approve", "pay-t-t1", op, "--args-digest", digest, "--store", store)
	if code != 0 || !strings.Contains(o, "accepted") {
		t.Fatalf("the right approval: exit %d, %q %q", code, o, e)
	}
	if code := <-done; code != 0 {
		t.Fatalf("the approved run's suite exited %d:\n%s%s", code, out.String(), errOut.String())
	}
}

// approvalSuite writes a suite named name of one case whose one call, a
// payment to a loopback sink that answers 200, waits for a person's
// approval; the scripted model then ends with the text after.
func approvalSuite(t *testing.T, name, after string) string {
	t.Helper()
	sink := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) }))
	t.Cleanup(sink.Close)
	return writeSuite(t, map[string]string{
		"suite.yaml": "name: " + name + "\ncases:\n  - {path: cases/pay/case.yaml}\ntreatments:\n  - {path: treatments/t.yaml}\ntrials: 1\n",
		"cases/pay/case.yaml": "id: pay\ninstruction: Pay the invoice.\nfixture: ../read-only/fixture\nbudget: {steps: 3}\n" +
			"tools: [http_call, task_complete]\nhttp: {allow: ['" + sink.URL + "/'], approval: true}\n",
		"treatments/t.yaml": "id: t\nmodel: {provider: scripted, scripts: ../scripts}\n",
		"scripts/pay.yaml":  "turns:\n  - calls: [{id: pay, name: http_call, args: {url: '" + sink.URL + "/pay', body: '{\"amount\": 5}'}}]\n  - text: " + after + "\n",
	})
}

// waitForApprovalCommand waits until the run of an approvalSuite prints
// the command that approves its call, and returns that command's match:
// the operation, the digest of its arguments and the store, in that order.
func waitForApprovalCommand(t *testing.T, out, errOut *testutil.LogBuffer, done <-chan int) []string {
	t.Helper()
	approve := regexp.MustCompile(`factline approve pay-t-t1 (\S+) --args-digest (sha256:[0-9a-f]{64}) --store (\S+)`)
	deadline := time.Now().Add(90 * time.Second)
	for {
		if m := approve.FindStringSubmatch(out.String()); m != nil {
			return m
		}
		select {
		case code := <-done:
			t.Fatalf("run exited %d before saying a run waits:\n%s%s", code, out.String(), errOut.String())
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("run never said the run waits for approval:\n%s", out.String())
		}
	}
}
