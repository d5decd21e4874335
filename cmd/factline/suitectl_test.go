package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/factline/factline/bus"
	"github.com/factline/factline/bus/bustest"
	"github.com/factline/factline/events"
	"github.com/factline/factline/fleet"
	"github.com/factline/factline/internal/testutil"
	auditpkg "github.com/factline/factline/ops/audit"
	"github.com/factline/factline/projections"
	"github.com/factline/factline/services/meter"
	"github.com/factline/factline/suites"
)

// writeTurnsSuite writes suite "ctl": one case under one treatment with
// the given trials, each run looking at its workspace for turns turns of
// delay each, then done, so that runs are mid-run, between turns, while
// another process controls the suite.
func writeTurnsSuite(t *testing.T, trials, turns int, delay string) string {
	t.Helper()
	dir := t.TempDir()
	var script strings.Builder
	script.WriteString("turns:\n")
	for i := range turns {
		fmt.Fprintf(&script, "  - calls: [{id: look%d, name: list_files, args: {dir: \".\"}}]\n    delay: %s\n    usage: {input_tokens: 100, output_tokens: 10, cost: 1}\n", i, delay)
	}
	script.WriteString("  - text: Done.\n    usage: {input_tokens: 100, output_tokens: 10, cost: 1}\n")
	testutil.WriteTree(t, dir, map[string]string{
		"suite.yaml": fmt.Sprintf("name: ctl\ncases: [{path: case.yaml}]\ntreatments: [{path: treatment.yaml}]\ntrials: %d\n", trials),
		"case.yaml": fmt.Sprintf("id: look\ninstruction: Look around.\nfixture: fixture\nbudget: {steps: %d}\n", turns+4) +
			"tools: [list_files, task_complete]\ngrading:\n  instruments:\n    - {id: unchanged, kind: scope, allow: ['*.tmp']}\n",
		"treatment.yaml": "id: scripted\nmodel: {provider: scripted, scripts: scripts}\n" +
			"stall: {repeated_failure: 0, repeated_observation: 0, repeated_error: 0, idle_turns: 0, alternation: 0, failing_verifications: 0}\n",
		"scripts/look.yaml": script.String(),
		"fixture/NOTES.md":  "nothing to fix\n",
	})
	return filepath.Join(dir, "suite.yaml")
}

// startControlledRun starts 'factline run' of a turns suite on a new
// store and waits until one of its runs has started a turn.
func startControlledRun(t *testing.T, trials, window int) (*proc, string) {
	t.Helper()
	store := filepath.Join(t.TempDir(), "store")
	r := startFactline(t, "run", writeTurnsSuite(t, trials, 4, "400ms"), "--store", store, "--fsync", "interval", "--json",
		"--request-window", fmt.Sprint(window))
	testutil.Within(t, time.Minute, "a run's first turn", func() bool {
		if r.exited() {
			t.Fatalf("the run exited %d before its first turn", r.code)
		}
		if _, err := os.Stat(filepath.Join(store, "jetstream")); err != nil {
			return false
		}
		_, out, _ := factline(t, "tail", "--store", store, "--kind", "turn.started", "--since", "start", "--no-follow")
		return strings.Contains(out, "turn.started")
	})
	return r, store
}

// suiteCtl runs 'factline suite ACTION ctl' against the store and wants
// it accepted.
func suiteCtl(t *testing.T, store string, action events.SuiteAction, reason string) {
	t.Helper()
	code, out, errOut := factline(t, "suite", string(action), "ctl", "--store", store, "--reason", reason, "--from", "tester")
	if code != 0 || !strings.Contains(out, "suite ctl "+string(action)+" by tester") {
		t.Fatalf("suite %s: exit %d %q %q", action, code, out, errOut)
	}
}

// controlReport is what these tests read of a report.
type controlReport struct {
	Complete     bool   `json:"complete"`
	ControlState string `json:"control_state"`
	NotRun       int    `json:"not_run"`
	Controlled   []struct {
		Action string    `json:"action"`
		From   string    `json:"from"`
		Reason string    `json:"reason"`
		At     time.Time `json:"at"`
	} `json:"controlled"`
	Treatments []struct {
		Passed, Failed, Graded, Excluded int
	} `json:"treatments"`
	Attempts []struct {
		Run     string `json:"run"`
		Outcome string `json:"outcome"`
		NotRun  bool   `json:"not_run"`
		Status  string `json:"status"`
	} `json:"attempts"`
}

func parseControlReport(t *testing.T, data string) controlReport {
	t.Helper()
	var r controlReport
	if err := json.Unmarshal([]byte(data), &r); err != nil {
		t.Fatalf("the report does not parse: %v\n%s", err, data)
	}
	return r
}

// auditStore wants the store's log to hold every invariant.
func auditStore(t *testing.T, store string) {
	t.Helper()
	if code, out, errOut := factline(t, "audit", "--store", store); code != 0 {
		t.Fatalf("audit: %d\n%s\n%s", code, out, errOut)
	}
}

// afterControl splits a suite's facts at its controls: the facts of each
// run committed after the control with the given action (and before the
// next control), by kind.
func afterControl(facts []events.Fact, action events.SuiteAction) (map[string]map[events.Kind]int, bool) {
	out := map[string]map[events.Kind]int{}
	in, seen := false, false
	for _, f := range facts {
		if c, ok := f.Body.(events.SuiteControlled); ok {
			in = c.Action == action
			seen = seen || in
			continue
		}
		if !in || f.Run == events.SuiteScope {
			continue
		}
		if out[f.Run] == nil {
			out[f.Run] = map[events.Kind]int{}
		}
		out[f.Run][f.Kind()]++
	}
	return out, seen
}

// A paused suite starts no run and holds its running runs at their next
// turn boundary until it is resumed; the resumed suite finishes whole,
// reported as if never paused, and its log passes the audit. The log
// shows the hold: no run started a turn after the pause beyond the one
// it was past its boundary check for, and no run was claimed beyond those
// past their start check, while a run that was mid-run at the pause went
// on after the resume.
func TestAPausedSuiteHoldsUntilResumedAndThenFinishes(t *testing.T) {
	t.Parallel()
	const trials, instances = 6, 2
	r, store := startControlledRun(t, trials, 1024)
	suiteCtl(t, store, events.SuitePause, "lunch")
	// Held for a while: long enough for every run to reach its next
	// boundary (a turn is 400ms), bounded.
	time.Sleep(3 * time.Second)
	if r.exited() {
		t.Fatalf("a paused suite's run exited %d", r.code)
	}
	suiteCtl(t, store, events.SuiteResume, "")
	if code := r.wait(t, 3*time.Minute); code != 0 {
		t.Fatalf("the resumed suite's run exited %d", code)
	}
	rep := parseControlReport(t, r.out.String())
	if !rep.Complete || rep.NotRun != 0 || rep.ControlState != "active" || len(rep.Controlled) != 2 || rep.Treatments[0].Passed != trials {
		t.Fatalf("report after the resume: %+v", rep)
	}
	facts := storeFacts(t, store, "ctl")
	paused, seen := afterControl(facts, events.SuitePause)
	if !seen {
		t.Fatal("no pause in the log")
	}
	claims := 0
	for run, kinds := range paused {
		claims += kinds[events.KindRunClaimed]
		if kinds[events.KindTurnStarted] > 1 {
			t.Errorf("run %s started %d turns while the suite was paused", run, kinds[events.KindTurnStarted])
		}
	}
	if claims > instances {
		t.Errorf("%d runs claimed while the suite was paused; at most %d were past their start check", claims, instances)
	}
	resumed, _ := afterControl(facts, events.SuiteResume)
	held := false
	for run, kinds := range resumed {
		if kinds[events.KindTurnStarted] > 0 && kinds[events.KindRunClaimed] == 0 && paused[run] != nil {
			held = true // began before the pause, went on after the resume
		}
	}
	if !held {
		t.Error("no run was held across the pause: the test proved nothing")
	}
	auditStore(t, store)
}

// A drained suite starts no further run; its running runs finish done;
// it is reported with what ran, the runs never started counted in no
// figure, and its log passes the audit.
func TestADrainedSuiteFinishesWhatRunsAndReportsTheRest(t *testing.T) {
	t.Parallel()
	const trials = 10
	r, store := startControlledRun(t, trials, 3)
	suiteCtl(t, store, events.SuiteDrain, "budget spent")
	if code := r.wait(t, 3*time.Minute); code != 0 {
		t.Fatalf("the drained suite's run exited %d", code)
	}
	rep := parseControlReport(t, r.out.String())
	if !rep.Complete || rep.ControlState != "drained" || rep.NotRun == 0 || len(rep.Controlled) != 1 ||
		rep.Controlled[0].From != "tester" || rep.Controlled[0].Reason != "budget spent" || rep.Controlled[0].At.IsZero() {
		t.Fatalf("drained report: %+v", rep)
	}
	a := rep.Treatments[0]
	if a.Passed+rep.NotRun != trials || a.Failed != 0 || a.Graded != a.Passed {
		t.Fatalf("the drained suite counts what never ran: %+v, not run %d", a, rep.NotRun)
	}
	facts := storeFacts(t, store, "ctl")
	claimed := map[string]bool{}
	for _, f := range facts {
		switch b := f.Body.(type) {
		case events.RunClaimed:
			claimed[f.Run] = true
		case events.RunEnded:
			if claimed[f.Run] && b.Status == events.RunCancelled {
				t.Errorf("run %s started and ended %s (%s): a drain lets running runs finish", f.Run, b.Status, b.Reason)
			}
			if !claimed[f.Run] && b.Reason != events.ReasonSuiteDrained {
				t.Errorf("run %s never started and ended %s (%s)", f.Run, b.Status, b.Reason)
			}
		}
	}
	for _, at := range rep.Attempts {
		if at.NotRun == claimed[at.Run] {
			t.Errorf("attempt %s: not_run %v, claimed %v", at.Run, at.NotRun, claimed[at.Run])
		}
	}
	if !strings.Contains(r.errOut.String()+r.out.String(), "drained") {
		t.Log("the run's output does not name the drain") // the JSON carries it; checked above
	}
	auditStore(t, store)
}

// A cancelled suite ends its running runs cancelled with the operator's
// reason (a run mid-turn at once), starts none of the rest, and is
// reported with what ran; a control after its report is refused naming
// why, and one of a suite the log does not hold names the suite.
func TestACancelledSuiteEndsItsRunsAndIsReported(t *testing.T) {
	t.Parallel()
	const trials = 8
	r, store := startControlledRun(t, trials, 3)
	suiteCtl(t, store, events.SuiteCancel, "wrong model")
	if code := r.wait(t, 3*time.Minute); code != 0 {
		t.Fatalf("the cancelled suite's run exited %d", code)
	}
	rep := parseControlReport(t, r.out.String())
	if !rep.Complete || rep.ControlState != "cancelled" || rep.NotRun == 0 {
		t.Fatalf("cancelled report: %+v", rep)
	}
	facts := storeFacts(t, store, "ctl")
	claimed, cancelled := map[string]bool{}, 0
	for _, f := range facts {
		switch b := f.Body.(type) {
		case events.RunClaimed:
			claimed[f.Run] = true
		case events.RunEnded:
			if claimed[f.Run] && b.Status == events.RunCancelled {
				cancelled++
				if !strings.Contains(b.Reason, "suite_cancelled: wrong model") {
					t.Errorf("run %s ended cancelled for %q, not the suite's reason", f.Run, b.Reason)
				}
			}
			if !claimed[f.Run] && b.Reason != events.ReasonSuiteCancelled {
				t.Errorf("run %s never started and ended %s (%s)", f.Run, b.Status, b.Reason)
			}
		}
	}
	if cancelled == 0 {
		t.Error("no running run was cancelled: the test proved nothing")
	}
	if a := rep.Treatments[0]; a.Graded+a.Excluded != trials || a.Failed != 0 {
		t.Fatalf("cancelled suite's counts: %+v", a)
	}
	auditStore(t, store)

	code, _, errOut := factline(t, "suite", "resume", "ctl", "--store", store)
	if code != 1 || !strings.Contains(errOut, "already reported") {
		t.Fatalf("a control after the report: exit %d %q", code, errOut)
	}
	code, _, errOut = factline(t, "suite", "pause", "nosuch", "--store", store)
	if code != 1 || !strings.Contains(errOut, "nosuch") || !strings.Contains(errOut, "no suite.submitted") {
		t.Fatalf("a control of a suite never submitted: exit %d %q", code, errOut)
	}
}

// suiteFacts reads suite ctl's facts from b, in log order.
func suiteFacts(t *testing.T, ctx context.Context, b *bus.Bus) []events.Fact {
	t.Helper()
	var out []events.Fact
	if _, err := b.Read(ctx, bus.ReadOptions{Filter: events.SuiteFilter("ctl")}, func(r bus.Raw) error {
		f, err := r.Fact()
		if err != nil {
			return err
		}
		out = append(out, f)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return out
}

// A pause that arrives before the first claim (here before any service
// runs at all) starts no run, on a real fleet, until the resume; then the
// suite runs whole, and the audit package finds its log sound. A drain
// after the last run ended changes nothing but the heading, and a control
// after the report is refused.
func TestAPauseBeforeTheFirstClaimStartsNothingUntilResumed(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	b, _ := bustest.Start(t)
	s, err := suites.Load(writeTurnsSuite(t, 4, 1, "50ms"))
	if err != nil {
		t.Fatal(err)
	}
	p, err := suites.Publish(ctx, b.Blobs(), s)
	if err != nil {
		t.Fatal(err)
	}
	if err := suites.Submit(ctx, b, p, "test"); err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	if err := controlSuite(ctx, b, "ctl", events.SuiteControlled{ID: "p1", Action: events.SuitePause, From: "tester", Reason: "not yet"}, &out); err != nil {
		t.Fatal(err)
	}
	f, err := fleet.Start(ctx, b, serveOptions{instances: 2, requestWindow: 1024}.fleetOptions(nil))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Stop() }()
	// A bounded look while paused: the meter may request the first
	// window (it read the submission before the pause), but no run is
	// claimed.
	time.Sleep(2 * time.Second)
	for _, fact := range suiteFacts(t, ctx, b) {
		if _, ok := fact.Body.(events.RunClaimed); ok {
			t.Fatalf("run %s claimed while its suite was paused", fact.Run)
		}
	}
	if err := controlSuite(ctx, b, "ctl", events.SuiteControlled{ID: "r1", Action: events.SuiteResume, From: "tester"}, &out); err != nil {
		t.Fatal(err)
	}
	var facts []events.Fact
	testutil.Within(t, 2*time.Minute, "the resumed suite's report", func() bool {
		facts = suiteFacts(t, ctx, b)
		for _, fact := range facts {
			if _, ok := fact.Body.(events.SuiteReported); ok {
				return true
			}
		}
		return false
	})
	r, err := meter.Report(ctx, b, "ctl")
	if err != nil {
		t.Fatal(err)
	}
	if !r.Complete || r.NotRun != 0 || r.Treatments[0].Passed != 4 || len(r.Controlled) != 2 {
		t.Fatalf("the resumed suite's report: complete %v, not run %d, %+v, controls %v", r.Complete, r.NotRun, r.Treatments[0], r.Controlled)
	}
	if v := auditpkg.Check(facts, auditpkg.Options{}); len(v) > 0 {
		t.Fatalf("audit: %v", v)
	}
	err = controlSuite(ctx, b, "ctl", events.SuiteControlled{ID: "d1", Action: events.SuiteDrain, From: "tester"}, &out)
	if !errors.Is(err, projections.ErrSuiteReported) || !strings.Contains(err.Error(), "ctl") {
		t.Fatalf("a drain after the report: %v", err)
	}
}
