package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/factline/factline/internal/testutil"
)

// The tests of one store, one server: real factline processes (the built
// binary) sharing a store directory, as an operator's shells would.

var (
	binOnce sync.Once
	binPath string
	binErr  error
)

// factlineBin builds this package's binary once per test binary.
func factlineBin(t *testing.T) string {
	t.Helper()
	binOnce.Do(func() {
		dir, err := os.MkdirTemp("", "factline-onestore-")
		if err != nil {
			binErr = err
			return
		}
		binPath = filepath.Join(dir, "factline")
		if out, err := testutil.GoBuild(binPath, ".").CombinedOutput(); err != nil {
			binErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if binErr != nil {
		t.Fatal(binErr)
	}
	return binPath
}

// proc is one factline process of a test.
type proc struct {
	args        []string
	cmd         *exec.Cmd
	out, errOut *testutil.LogBuffer
	done        chan struct{}
	code        int
}

// awaitFirstTurn waits until run, of the 'run' process r holding store,
// has started its first turn, failing the test if r exits first.
func awaitFirstTurn(t *testing.T, r *proc, store, run string) {
	t.Helper()
	testutil.Within(t, time.Minute, "the slow run's first turn", func() bool {
		if r.exited() {
			t.Fatalf("the run exited %d before its first turn", r.code)
		}
		if _, err := os.Stat(filepath.Join(store, "jetstream")); err != nil {
			return false // not even made yet: a tail would be refused
		}
		_, out, _ := factline(t, "tail", "--store", store, "--run", run, "--kind", "turn.started", "--since", "start", "--no-follow")
		return strings.Contains(out, "turn.started")
	})
}

// startFactline starts the binary with args; the process is killed at the
// test's end if it is still running, and its output logged if the test
// failed.
func startFactline(t *testing.T, args ...string) *proc {
	t.Helper()
	p := &proc{args: args, out: &testutil.LogBuffer{}, errOut: &testutil.LogBuffer{}, done: make(chan struct{})}
	p.cmd = exec.Command(factlineBin(t), args...)
	p.cmd.Stdout, p.cmd.Stderr = p.out, p.errOut
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		_ = p.cmd.Wait()
		p.code = p.cmd.ProcessState.ExitCode()
		close(p.done)
	}()
	t.Cleanup(func() {
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		<-p.done
		if t.Failed() {
			t.Logf("factline %s (exit %d):\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), p.code, p.out.String(), p.errOut.String())
		}
	})
	return p
}

// wait waits for the process to exit (at most d) and returns its code.
func (p *proc) wait(t *testing.T, d time.Duration) int {
	t.Helper()
	select {
	case <-p.done:
		return p.code
	case <-time.After(d):
		t.Fatalf("factline %s did not exit within %v", strings.Join(p.args, " "), d)
		return -1
	}
}

// exited reports whether the process has ended.
func (p *proc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// kill SIGKILLs the process (and its children) and waits for it.
func (p *proc) kill(t *testing.T) {
	t.Helper()
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
	<-p.done
}

// factline runs the binary to its end (at most two minutes).
func factline(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	p := startFactline(t, args...)
	code = p.wait(t, 2*time.Minute)
	return code, p.out.String(), p.errOut.String()
}

// checkReport asserts a 'run --json' report is its suite's, complete,
// with every planned attempt.
func checkReport(t *testing.T, who string, data string, suite string, planned int) {
	t.Helper()
	var r struct {
		Name     string            `json:"name"`
		Complete bool              `json:"complete"`
		Attempts []json.RawMessage `json:"attempts"`
	}
	if err := json.Unmarshal([]byte(data), &r); err != nil {
		t.Fatalf("%s: the report does not parse: %v\n%s", who, err, data)
	}
	if r.Name != suite || !r.Complete || len(r.Attempts) != planned {
		t.Errorf("%s: report of %q, complete %v, %d attempts; want %q complete with %d", who, r.Name, r.Complete, len(r.Attempts), suite, planned)
	}
}

// Two 'factline run --store DIR' started at the same instant on one new
// store: exactly one opens the store's server, the other attaches to it,
// and both suites are run, graded and measured whole, whichever process
// ends first; the log they leave passes the audit.
func TestTwoRunsOnOneStoreBothComplete(t *testing.T) {
	t.Parallel()
	store := filepath.Join(t.TempDir(), "store")
	var runs []*proc
	for _, suite := range []string{"testdata/onestore/a.yaml", "testdata/onestore/b.yaml"} {
		runs = append(runs, startFactline(t, "run", suite, "--store", store, "--fsync", "interval", "--json"))
	}
	for i, p := range runs {
		if code := p.wait(t, 4*time.Minute); code != 0 {
			t.Fatalf("run %s exited %d", p.args[1], code)
		}
		checkReport(t, p.args[1], p.out.String(), []string{"one-a", "one-b"}[i], 28)
	}
	if code, out, errOut := factline(t, "audit", "--store", store); code != 0 {
		t.Fatalf("audit of the shared store: %d\n%s\n%s", code, out, errOut)
	}
	for _, suite := range []string{"one-a", "one-b"} {
		code, out, errOut := factline(t, "report", suite, "--store", store, "--json")
		if code != 0 {
			t.Fatalf("report %s: %d %s", suite, code, errOut)
		}
		checkReport(t, "report "+suite, out, suite, 28)
	}
}

// writeSlowSuite writes a suite of one run that takes minutes: its model
// answers each of 150 turns after a second, with a look at the workspace
// (the stall handler off), so the run is still running, taking signals at
// the end of every turn, while other processes steer and cancel it.
func writeSlowSuite(t *testing.T) string {
	t.Helper()
	return writeSlowSuiteWith(t, "valid_outcomes: [done, blocked, incomplete, exhausted, needs_human, cancelled]\n")
}

// writeSlowSuiteWith writes the slow suite with extra lines in suite.yaml.
func writeSlowSuiteWith(t *testing.T, extra string) string {
	t.Helper()
	dir := t.TempDir()
	var script strings.Builder
	script.WriteString("turns:\n")
	for i := range 150 {
		fmt.Fprintf(&script, "  - calls: [{id: look%d, name: list_files, args: {dir: \".\"}}]\n    delay: 1s\n    usage: {input_tokens: 100, output_tokens: 10, cost: 1}\n", i)
	}
	testutil.WriteTree(t, dir, map[string]string{
		"suite.yaml": "name: slow\ncases: [{path: case.yaml}]\ntreatments: [{path: treatment.yaml}]\ntrials: 1\n" + extra,
		"case.yaml": "id: slow\ninstruction: Look around until told otherwise.\nfixture: fixture\nbudget: {steps: 200}\n" +
			"tools: [list_files, task_complete]\ngrading:\n  instruments:\n    - {id: unchanged, kind: scope, allow: ['*.tmp']}\n",
		"treatment.yaml": "id: scripted\nmodel: {provider: scripted, scripts: scripts}\n" +
			"stall: {repeated_failure: 0, repeated_observation: 0, repeated_error: 0, idle_turns: 0, alternation: 0, failing_verifications: 0}\n",
		"scripts/slow.yaml": script.String(),
		"fixture/NOTES.md":  "Release 2.4 uses port 9090 by default.\n",
	})
	return filepath.Join(dir, "suite.yaml")
}

// Signals sent with --store reach the runner of a 'run' that holds the
// store in another process: a steer is accepted (a new task generation),
// then a cancel ends the run, and the run's process measures its suite.
func TestControlsReachTheRunnerOfALocalRun(t *testing.T) {
	t.Parallel()
	store := filepath.Join(t.TempDir(), "store")
	r := startFactline(t, "run", writeSlowSuite(t), "--store", store, "--fsync", "interval", "--json")
	const run = "slow-scripted-t1"
	awaitFirstTurn(t, r, store, run)
	code, out, errOut := factline(t, "steer", run, "also say which file says so", "--store", store, "--wait", "30s")
	if code != 0 || !strings.Contains(out, "accepted by slow/"+run) || !strings.Contains(out, "generation 2") {
		t.Fatalf("steer from another process: %d %q %q", code, out, errOut)
	}
	code, out, errOut = factline(t, "cancel", run, "--reason", "enough", "--store", store, "--wait", "30s")
	if code != 0 || !strings.Contains(out, "accepted by slow/"+run) {
		t.Fatalf("cancel from another process: %d %q %q", code, out, errOut)
	}
	if code := r.wait(t, 2*time.Minute); code != 0 {
		t.Fatalf("the run exited %d", code)
	}
	checkReport(t, "slow", r.out.String(), "slow", 1)
	if code, out, errOut := factline(t, "audit", "--store", store); code != 0 {
		t.Fatalf("audit: %d\n%s\n%s", code, out, errOut)
	}
}

// A run the report excludes (cancelled, not a valid outcome) is measured
// without its grade, but its candidate is still owed one: a local run stops
// its services only once the grader has graded every sealed candidate of
// the suite, so the store it leaves passes the audit.
func TestALocalRunStopsOnlyAfterItsExcludedRunsAreGraded(t *testing.T) {
	t.Parallel()
	store := filepath.Join(t.TempDir(), "store")
	r := startFactline(t, "run", writeSlowSuiteWith(t, ""), "--store", store, "--fsync", "interval", "--json")
	const run = "slow-scripted-t1"
	awaitFirstTurn(t, r, store, run)
	if code, out, errOut := factline(t, "cancel", run, "--reason", "enough", "--store", store, "--wait", "30s"); code != 0 {
		t.Fatalf("cancel from another process: %d %q %q", code, out, errOut)
	}
	if code := r.wait(t, 2*time.Minute); code != 0 {
		t.Fatalf("the run exited %d: %s", code, r.errOut.String())
	}
	if code, out, errOut := factline(t, "audit", "--store", store); code != 0 {
		t.Fatalf("audit: %d\n%s\n%s", code, out, errOut)
	}
}

var viewURLRe = regexp.MustCompile(`factline view: (http://\S+/)`)

// A tail and a viewer opened on a store before a suite is run on it show
// that suite's facts as they are committed; when the process holding the
// store is killed, the viewer (attached to it) takes the store over and
// stays live for the next suite.
func TestTailAndViewShowARunStartedAfterThem(t *testing.T) {
	t.Parallel()
	store := filepath.Join(t.TempDir(), "store")
	if code, _, errOut := factline(t, "run", "testdata/tiny/suite.yaml", "--store", store, "--fsync", "interval"); code != 0 {
		t.Fatalf("the first run: %d %s", code, errOut)
	}
	tail := startFactline(t, "tail", "--store", store, "--since", "start")
	testutil.Within(t, time.Minute, "tail shows the store's first suite", func() bool { return strings.Contains(tail.out.String(), "tiny/") })
	view := startFactline(t, "view", "--store", store, "--listen", "127.0.0.1:0")
	var url string
	testutil.Within(t, time.Minute, "the viewer serves", func() bool {
		m := viewURLRe.FindStringSubmatch(view.out.String())
		if m != nil {
			url = m[1]
		}
		return m != nil
	})

	if code, _, errOut := factline(t, "run", "testdata/onestore/tiny-b.yaml", "--store", store); code != 0 {
		t.Fatalf("the run after the tail: %d %s", code, errOut)
	}
	testutil.Within(t, time.Minute, "tail shows the new suite's report", func() bool {
		return strings.Contains(tail.out.String(), "tiny-b/") && strings.Contains(tail.out.String(), "suite.reported")
	})
	testutil.Within(t, time.Minute, "the viewer shows the new suite", func() bool { return strings.Contains(get(t, url), "tiny-b") })

	// The tail held the store (it opened it first): killed, its viewer
	// takes the store over and shows the next suite too.
	tail.kill(t)
	third := filepath.Join(t.TempDir(), "tiny-c.yaml")
	data, err := os.ReadFile("testdata/onestore/tiny-b.yaml")
	if err != nil {
		t.Fatal(err)
	}
	data = []byte(strings.ReplaceAll(strings.ReplaceAll(string(data), "name: tiny-b", "name: tiny-c"), "../../../../examples/demo", mustAbs(t, "../../examples/demo")))
	if err := os.WriteFile(third, data, 0o644); err != nil {
		t.Fatal(err)
	}
	if code, _, errOut := factline(t, "run", third, "--store", store); code != 0 {
		t.Fatalf("the run after the holder was killed: %d %s", code, errOut)
	}
	testutil.Within(t, time.Minute, "the viewer shows the suite run after the holder died", func() bool { return strings.Contains(get(t, url), "tiny-c") })
	if code, out, errOut := factline(t, "audit", "--store", store); code != 0 {
		t.Fatalf("audit: %d\n%s\n%s", code, out, errOut)
	}
}

func mustAbs(t *testing.T, p string) string {
	t.Helper()
	abs, err := filepath.Abs(p)
	if err != nil {
		t.Fatal(err)
	}
	return abs
}

// get fetches a page ("" when it cannot).
func get(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		return ""
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return string(body)
}

// A process SIGKILLed while it holds a store leaves its lock and its
// address behind; the next process takes the store over and reads the
// store's own log, even when another store's server now listens where the
// dead one did.
func TestAKilledHoldersStoreIsTakenOver(t *testing.T) {
	t.Parallel()
	store, other := filepath.Join(t.TempDir(), "store"), filepath.Join(t.TempDir(), "other")
	if code, _, errOut := factline(t, "run", "testdata/tiny/suite.yaml", "--store", store, "--fsync", "interval"); code != 0 {
		t.Fatalf("the first run: %d %s", code, errOut)
	}
	port := freePort(t)
	holder := startFactline(t, "serve", "--services", "meter", "--store", store, "--listen", strconv.Itoa(port))
	testutil.Within(t, time.Minute, "serve listens", func() bool { return strings.Contains(holder.out.String(), "serving meter") })
	holder.kill(t)
	if _, err := os.Stat(filepath.Join(store, "nats-url")); err != nil {
		t.Fatalf("the killed holder left no address behind (%v): the test would prove nothing", err)
	}
	// Another store's server at the dead holder's address.
	foreign := startFactline(t, "serve", "--services", "meter", "--store", other, "--listen", strconv.Itoa(port), "--no-auth")
	testutil.Within(t, time.Minute, "the other store's server listens", func() bool { return strings.Contains(foreign.out.String(), "serving meter") })

	code, out, errOut := factline(t, "tail", "--store", store, "--since", "start", "--no-follow", "--kind", "suite.reported")
	if code != 0 || !strings.Contains(out, "tiny/") {
		t.Fatalf("tail of the store after its holder was killed: %d %q %q", code, out, errOut)
	}

	// The next holder's lock names it.
	next := startFactline(t, "tail", "--store", store)
	testutil.Within(t, time.Minute, "the new holder's lock names it", func() bool {
		data, _ := os.ReadFile(filepath.Join(store, "factline.lock"))
		return strings.Contains(string(data), fmt.Sprintf("pid %d", next.cmd.Process.Pid))
	})
}

// A command that cannot attach to the process holding a store refuses,
// naming that process: one that holds the lock and serves nothing (a
// backup holding it with flock(1)), a --fsync other than the holder's,
// and a second 'serve --listen'.
func TestACommandThatCannotAttachNamesTheHolder(t *testing.T) {
	store := filepath.Join(t.TempDir(), "store")
	if code, _, errOut := factline(t, "run", "testdata/tiny/suite.yaml", "--store", store, "--fsync", "interval"); code != 0 {
		t.Fatalf("the first run: %d %s", code, errOut)
	}
	flock, err := exec.LookPath("flock")
	if err != nil {
		t.Fatalf("flock(1) (util-linux) is needed to hold a store's lock from outside factline: %v", err)
	}
	backup := exec.Command(flock, filepath.Join(store, "factline.lock"), "sleep", "120")
	backup.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := backup.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = syscall.Kill(-backup.Process.Pid, syscall.SIGKILL); _ = backup.Wait() })
	// flock(1) holds the lock once it runs its command.
	testutil.Within(t, 10*time.Second, "flock holds the lock", func() bool {
		return testutil.FileLocked(filepath.Join(store, "factline.lock"))
	})
	defer func(d time.Duration) { attachWait = d }(attachWait)
	attachWait = 2 * time.Second
	code, _, errOut := runCLI(t, "tail", "--store", store, "--since", "start", "--no-follow")
	if code != 1 || !strings.Contains(errOut, fmt.Sprintf("process %d", backup.Process.Pid)) || !strings.Contains(errOut, "serves it at no address") {
		t.Errorf("tail of a store held by a process that serves nothing: %d %q", code, errOut)
	}
	_ = syscall.Kill(-backup.Process.Pid, syscall.SIGKILL)
	_ = backup.Wait()

	holder := startFactline(t, "tail", "--store", store)
	pid := fmt.Sprintf("process %d", holder.cmd.Process.Pid)
	testutil.Within(t, time.Minute, "the tail holds the store", func() bool {
		data, _ := os.ReadFile(filepath.Join(store, "nats-url"))
		return strings.Contains(string(data), fmt.Sprintf("pid %d", holder.cmd.Process.Pid))
	})
	code, _, errOut = factline(t, "run", "testdata/onestore/tiny-b.yaml", "--store", store, "--fsync", "interval")
	if code != 2 || !strings.Contains(errOut, pid) || !strings.Contains(errOut, "fsync: always") {
		t.Errorf("run --fsync interval on a store held with fsync always: %d %q", code, errOut)
	}
	code, _, errOut = factline(t, "serve", "--services", "meter", "--store", store, "--listen", "0")
	if code != 1 || !strings.Contains(errOut, pid) {
		t.Errorf("serve --listen on a store another process holds: %d %q", code, errOut)
	}
}
