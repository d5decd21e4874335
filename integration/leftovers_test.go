package integration

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/factline/factline/bus"
	"github.com/factline/factline/events"
	"github.com/factline/factline/sandbox"
	"github.com/factline/factline/sandbox/sandboxtest"
	"github.com/factline/factline/services/grader"
)

// leftoverKills is how many times the test kills each of the runner and
// the grader.
const leftoverKills = 3

// writeLeftoverSuite writes a suite of two cases, one on the host and one
// in image, whose command and whose grading command each take long enough
// to be killed in the middle of.
func writeLeftoverSuite(t *testing.T, image string) string {
	t.Helper()
	dir := t.TempDir()
	grading := "grading:\n  instruments:\n    - {id: slow, kind: command, command: \"sleep 3; echo graded\", timeout: 60s}\n"
	caseOf := func(id, extra string) string {
		return "id: " + id + "\ninstruction: wait, then finish\nbudget: {steps: 4}\ntools: [run_command, task_complete]\n" + extra + grading
	}
	script := `turns:
  - calls:
      - {id: wait, name: run_command, args: {command: "echo started; sleep 3; echo done > out.txt", timeout_seconds: 30}}
  - calls:
      - {id: done, name: task_complete, args: {status: blocked, reason: nothing more to do}}
`
	files := map[string]string{
		"suite.yaml":        "name: leftovers\ncases: [{path: host.yaml}, {path: ctr.yaml}]\ntreatments: [{path: t.yaml}]\ntrials: 3\n",
		"host.yaml":         caseOf("host", ""),
		"ctr.yaml":          caseOf("ctr", "environment: {image: \""+image+"\", pids: 64}\n"),
		"t.yaml":            "id: scripted\nmodel: {provider: scripted, scripts: scripts}\n",
		"scripts/host.yaml": script,
		"scripts/ctr.yaml":  script,
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

// killer SIGKILLs a service process once it is busy with a run (a
// command running, a grading under way), a bounded number of times, at
// least once on a run of each case, notes what the dead process left, and
// starts it again at once.
type killer struct {
	p    *proc
	kind string // its directories: factline-<kind>.…
	work string
	// busy reports whether the process is in the middle of its work on
	// run; leftContainers lists the containers of its kind.
	busy           func(run string) bool
	leftContainers func() []string

	mu       sync.Mutex
	kills    int
	killing  bool
	covered  map[string]bool // case → killed on one of its runs
	attempts int             // attempt directories the dead left
	ctrs     int             // containers the dead left
	wg       sync.WaitGroup
}

// caseOf is the case a run of the leftover suite belongs to.
func caseOf(run string) string {
	if strings.HasPrefix(run, "ctr-") {
		return "ctr"
	}
	return "host"
}

// maybe kills the process once it is busy with run (or after 20 s),
// unless a kill is under way, all were spent, or this run's case was
// covered while the other was not.
func (k *killer) maybe(run string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	c := caseOf(run)
	if k.killing || k.kills >= leftoverKills || (k.covered[c] && !(k.covered["host"] && k.covered["ctr"])) {
		return
	}
	k.killing = true
	k.kills++
	k.covered[c] = true
	k.wg.Go(func() {
		for deadline := time.Now().Add(20 * time.Second); !k.busy(run) && time.Now().Before(deadline); {
			time.Sleep(100 * time.Millisecond)
		}
		pid := k.p.pid()
		k.p.crash()
		attempts := k.deadAttempts(pid)
		ctrs := len(k.leftContainers())
		k.p.start()
		k.mu.Lock()
		k.attempts += attempts
		k.ctrs += ctrs
		k.killing = false
		k.mu.Unlock()
	})
}

// deadAttempts counts the directories the dead process pid left
// (factline-<kind>.<boot>.<pidns>.<pid>.<start>.<label>-<random>).
func (k *killer) deadAttempts(pid int) int {
	sites, _ := filepath.Glob(filepath.Join(k.work, "factline-"+k.kind+".*"))
	n := 0
	for _, site := range sites {
		if f := strings.Split(filepath.Base(site), "."); len(f) == 6 && f[3] == strconv.Itoa(pid) {
			n++
		}
	}
	return n
}

// attemptOf reports whether a workspace of run is in a directory of kind:
// <work>/factline-<kind>.<owner>.<prefix><run>-<random>/ws.
func attemptOf(work, kind, prefix, run string) bool {
	found, _ := filepath.Glob(filepath.Join(work, "factline-"+kind+".*."+prefix+run+"-*", "ws"))
	return len(found) > 0
}

// runContainers lists the containers of one run of a suite with the
// extra label filters.
func runContainers(t *testing.T, suite, run string, filters ...string) []string {
	t.Helper()
	args := []string{"ps", "--all", "--format", "{{.Names}}", "--filter", "label=" + sandbox.LabelSuite + "=" + suite}
	if run != "" {
		args = append(args, "--filter", "label="+sandbox.LabelRun+"="+run)
	}
	for _, f := range filters {
		args = append(args, "--filter", f)
	}
	out, err := exec.Command(sandbox.EngineFromEnv().Bin, args...).Output()
	if err != nil {
		t.Fatalf("list containers: %v", err)
	}
	return strings.Fields(string(out))
}

// Must show: runner and grader processes SIGKILLed again and again in the
// middle of their work — a command running on the host, a command running
// in the attempt's container, a grading command on the host and in a
// grading container — leave nothing behind. Each kill leaves the dead
// process's directory (and containers) in the work dir; the instance
// started in its place, or taking its work over, removes them, and once
// the suite is reported and every service stopped, the work dir is empty
// and no container of the suite is left.
func TestKilledServicesLeaveNothingBehind(t *testing.T) {
	t.Parallel()
	// The factline binary is built (once) before any context of the
	// test starts: the build is no part of what the context bounds.
	factlineBinary(t)
	image := sandboxtest.Image(t, "plain")
	srv := startServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	startFleetIn(t, ctx, fleetSpec{copies: 1, ackWait: 2 * time.Second, connect: connector(t, srv, bus.Config{}), noRunner: true, noGrader: true})
	work := sandboxtest.ReachableDir(t)
	args := func(service string) []string {
		return []string{"serve", "--services", service, "--nats", srv.ClientURL(), "--instances", "2", "--ack-wait", faultAckWait,
			"--max-deliver", "10", "--work-dir", work}
	}
	grading := "label=" + grader.LabelGrading + "=true"
	runners := &killer{p: startProc(t, args("runner")...), kind: "runner", work: work, covered: map[string]bool{},
		busy: func(run string) bool {
			// The command was dispatched; give it a moment to start (it
			// runs for three seconds).
			time.Sleep(time.Second)
			return true
		},
		leftContainers: func() []string { return runContainers(t, "leftovers", "", "label="+sandbox.LabelLease) }}
	graders := &killer{p: startProc(t, args("grader")...), kind: "grader", work: work, covered: map[string]bool{},
		busy: func(run string) bool {
			if caseOf(run) == "ctr" {
				return len(runContainers(t, "leftovers", run, grading)) > 0
			}
			return attemptOf(work, "grader", "grade-", run)
		},
		leftContainers: func() []string { return runContainers(t, "leftovers", "", grading) }}
	b := connector(t, srv, bus.Config{})()
	watchFacts(t, b.Conn(), "leftovers", func(f events.Fact) {
		switch body := f.Body.(type) {
		case events.DispatchIntended:
			if body.Tool == "run_command" {
				runners.maybe(f.Run)
			}
		case events.CandidateSealed:
			graders.maybe(f.Run)
		}
	})
	submitSuite(t, ctx, b, writeLeftoverSuite(t, image))
	awaitReported(t, ctx, b, "leftovers", nil)
	runners.wg.Wait()
	graders.wg.Wait()
	runners.p.stop(syscall.SIGTERM)
	graders.p.stop(syscall.SIGTERM)

	t.Logf("runner: %d kills left %d attempt directories and %d containers; grader: %d kills left %d directories and %d containers",
		runners.kills, runners.attempts, runners.ctrs, graders.kills, graders.attempts, graders.ctrs)
	entries, err := os.ReadDir(work)
	if err != nil {
		t.Fatal(err)
	}
	var left []string
	for _, e := range entries {
		left = append(left, e.Name())
	}
	if len(left) > 0 {
		t.Errorf("left in the work dir after every service stopped: %v", left)
	}
	if ctrs := suiteContainers(t, "leftovers"); len(ctrs) > 0 {
		t.Errorf("containers of the suite left after every service stopped: %v", ctrs)
	}
	if runners.kills < leftoverKills || graders.kills < leftoverKills {
		t.Errorf("too few kills to prove anything: runner %d, grader %d", runners.kills, graders.kills)
	}
	if runners.attempts == 0 || graders.attempts == 0 || runners.ctrs == 0 || graders.ctrs == 0 {
		t.Error("the kills left nothing of the dead to remove: the test proves nothing")
	}
}
