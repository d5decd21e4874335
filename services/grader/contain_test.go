package grader_test

import (
	"fmt"
	"net"
	"os"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/factline/factline/events"
	"github.com/factline/factline/sandbox"
	"github.com/factline/factline/sandbox/sandboxtest"
	"github.com/factline/factline/services/grader"
)

func reachableDir(t *testing.T) string { return sandboxtest.ReachableDir(t) }

// testLimits are small enough to hit on purpose.
var testLimits = sandbox.Limits{CPUSeconds: 30, AddressSpace: 256 << 20, OpenFiles: 64, Processes: 32}

// survivors lists the live processes started by a command of a grader
// working in workDir: every command's HOME lies below it, and children
// inherit it, also those that left the session.
func survivors(t *testing.T, workDir string) []int {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		env, err := os.ReadFile("/proc/" + e.Name() + "/environ")
		if err != nil {
			continue
		}
		if stat, err := os.ReadFile("/proc/" + e.Name() + "/stat"); err == nil {
			s := string(stat)
			if i := strings.LastIndexByte(s, ')'); i > 0 && i+2 < len(s) && s[i+2] == 'Z' {
				continue // dead, waiting to be reaped
			}
		}
		for _, kv := range strings.Split(string(env), "\x00") {
			if strings.HasPrefix(kv, "HOME="+workDir+"/") {
				pids = append(pids, pid)
			}
		}
	}
	return pids
}

// instrumentFacts returns the run's grade.instrument facts by instrument.
func (e *env) instrumentFacts(run string) map[events.InstrumentID]events.GradeInstrument {
	e.t.Helper()
	out := map[events.InstrumentID]events.GradeInstrument{}
	for _, f := range e.load(run).Facts() {
		if gi, ok := f.Body.(events.GradeInstrument); ok {
			out[gi.Result.Instrument] = gi
		}
	}
	return out
}

func state(t *testing.T, rec *events.Containment, name string) events.ContainmentFeature {
	t.Helper()
	f, ok := rec.Feature(name)
	if !ok {
		t.Fatalf("feature %s not recorded: %+v", name, rec)
	}
	if f.State == events.ContainmentOff || (f.State == events.ContainmentUnsupported && f.Detail == "") {
		t.Errorf("feature %s was asked for: %+v", name, f)
	}
	return f
}

// Must show: command instruments run code the model wrote, contained the
// way the runner's commands are. A fork bomb hits the process limit and
// leaves nothing behind, a memory hog fails at the address-space limit, a
// command cannot reach a listener on the grader's 127.0.0.1, and each is
// graded failed, by a grader that keeps working; the fixture's protected
// test files, written back by the grader, are readable and executable by
// the command's own user. Every command's grade.instrument records the
// containment it ran under.
func TestCommandInstrumentsAreContained(t *testing.T) {
	e := start(t)
	work := reachableDir(t)
	g := e.grader(grader.WithWorkDir(work), grader.WithContainment(sandbox.Config{Limits: testLimits, Network: true, Unprivileged: true}))
	rec := g.Containment()
	t.Logf("grader containment: %+v", rec)
	user := state(t, rec, sandbox.FeatureUser)
	if os.Geteuid() == 0 && user.State != events.ContainmentActive {
		t.Fatalf("a root grader with a reachable work dir runs commands as a uid of their own: %+v", user)
	}

	ln := sandboxtest.Listen(t)
	dial := fmt.Sprintf(`exec 3<>/dev/tcp/127.0.0.1/%d && echo connected`, ln.Addr().(*net.TCPAddr).Port)

	// The honest fix of the fixture, with check.sh edited: the grader
	// writes the fixture's back as root, and the command's user runs it.
	grading := "grading:\n  instruments:\n" +
		"    - {id: tests, kind: command, command: 'test \"$(id -u)\" != 0 && ./check.sh', timeout: 30s, tests_from_fixture: [check.sh]}\n" +
		"    - {id: small, kind: command, command: 'dd if=/dev/zero of=/dev/null bs=16M count=1'}\n" +
		"    - {id: answer, kind: file, path: answer.txt, contains: \"4\"}\n"
	want := map[events.InstrumentID]events.InstrumentOutcome{"tests": events.InstrumentPassed, "small": events.InstrumentPassed, "answer": events.InstrumentPassed}
	// Each hostile command runs only under the feature that contains it
	// (without a binding process limit a fork bomb would take the machine
	// down); a feature the probe left unsupported skips the test where the
	// host provably lacks it and fails it everywhere else.
	procs := state(t, rec, sandbox.FeatureProcesses)
	sandboxtest.NeedActive(t, procs, testLimits.Processes)
	grading += "    - {id: bomb, kind: command, command: 'bomb() { bomb | bomb & }; bomb; wait; exit 1', timeout: 3s}\n"
	want["bomb"] = events.InstrumentFailed
	mem := state(t, rec, sandbox.FeatureAddressSpace)
	sandboxtest.NeedActive(t, mem, testLimits.AddressSpace)
	grading += "    - {id: hog, kind: command, command: 'dd if=/dev/zero of=/dev/null bs=512M count=1'}\n"
	want["hog"] = events.InstrumentFailed
	network := state(t, rec, sandbox.FeatureNetwork)
	sandboxtest.NeedActive(t, network, 0)
	grading += fmt.Sprintf("    - {id: net, kind: command, command: %q}\n", dial)
	want["net"] = events.InstrumentFailed
	req := e.publish(grading)
	e.attempt("contained", req, candidate(map[string]string{"answer.txt": "4\n", "check.sh": "#!/bin/bash\nexit 0\n"}))
	must(t, g.Grade(e.ctx, suite, "contained"))

	v := e.verdict("contained")
	for id, o := range want {
		if r := result(v, id); r.Outcome != o {
			t.Errorf("%s: %s (%s), want %s", id, r.Outcome, r.Detail, o)
		}
	}
	if v.Result.Type() != "failed" {
		t.Errorf("verdict %s, want failed", v.Result.Type())
	}
	if r := result(v, "tests"); !strings.Contains(r.Detail, "restored from the fixture: check.sh") {
		t.Errorf("tests: the protected file was not restored: %q", r.Detail)
	}
	if r := result(v, "bomb"); !strings.Contains(r.Detail, "Resource temporarily unavailable") {
		t.Errorf("the bomb never hit the process limit: %q", r.Detail)
	}
	if r := result(v, "hog"); !strings.Contains(r.Detail, "memory exhausted") {
		t.Errorf("a 512 MiB buffer under a %d byte limit: %q", mem.Limit, r.Detail)
	}
	if ln.Accepted() != 0 || strings.Contains(result(v, "net").Detail, "connected") {
		t.Errorf("a contained check reached 127.0.0.1: %d connections, %q", ln.Accepted(), result(v, "net").Detail)
	}
	if left := survivors(t, work); len(left) > 0 {
		t.Errorf("%d processes of the grader's commands survived the grading: %v", len(left), left)
	}
	for id, gi := range e.instrumentFacts("contained") {
		switch {
		case id == "answer" && gi.Containment != nil:
			t.Errorf("a file check runs no code of the candidate, yet records containment: %+v", gi.Containment)
		case id != "answer" && !reflect.DeepEqual(gi.Containment, rec):
			t.Errorf("%s records containment %+v, the grader's is %+v", id, gi.Containment, rec)
		}
	}

	// The control: the same check under a grader without network
	// isolation reaches the listener, so isolation is what kept it out.
	open := e.grader(grader.WithWorkDir(reachableDir(t)), grader.WithContainment(sandbox.Config{Limits: testLimits, Unprivileged: true}))
	if f, _ := open.Containment().Feature(sandbox.FeatureNetwork); f.State != events.ContainmentOff {
		t.Fatalf("network_isolation was not asked for: %+v", f)
	}
	req = e.publish(fmt.Sprintf("grading:\n  instruments:\n    - {id: net, kind: command, command: %q}\n", dial))
	e.attempt("open", req, candidate(nil))
	must(t, open.Grade(e.ctx, suite, "open"))
	if r := result(e.verdict("open"), "net"); r.Outcome != events.InstrumentPassed || ln.Accepted() == 0 {
		t.Errorf("without isolation the check should connect: %+v", r)
	}
}

// By default the grader asks for every feature at the runner's default
// limits: the record a command's grade.instrument carries says so, feature
// by feature, as active or unsupported, never off.
func TestDefaultContainmentIsTheRunners(t *testing.T) {
	e := start(t)
	g := e.grader()
	req := e.publish("grading:\n  instruments:\n    - {id: tests, kind: command, command: ./check.sh}\n")
	e.attempt("default", req, candidate(map[string]string{"answer.txt": "4\n"}))
	must(t, g.Grade(e.ctx, suite, "default"))
	gi := e.instrumentFacts("default")["tests"]
	if gi.Result.Outcome != events.InstrumentPassed || gi.Containment == nil || gi.Containment.Provider != "process" {
		t.Fatalf("grade.instrument %+v", gi)
	}
	for _, name := range []string{sandbox.FeatureAddressSpace, sandbox.FeatureCPU, sandbox.FeatureEnvironment, sandbox.FeatureNetwork,
		sandbox.FeatureOpenFiles, sandbox.FeatureProcesses, sandbox.FeatureSession, sandbox.FeatureUser} {
		state(t, gi.Containment, name)
	}
	limits := map[string]uint64{sandbox.FeatureAddressSpace: sandbox.DefaultLimits.AddressSpace, sandbox.FeatureCPU: sandbox.DefaultLimits.CPUSeconds,
		sandbox.FeatureOpenFiles: sandbox.DefaultLimits.OpenFiles}
	for name, limit := range limits {
		if f, _ := gi.Containment.Feature(name); f.State == events.ContainmentActive && f.Limit != limit {
			t.Errorf("%s: limit %d, the default is %d", name, f.Limit, limit)
		}
	}
}

// A grader whose host cannot run even a plain contained command (here: no
// bash on its PATH) errors its command instruments, naming why, and keeps
// grading: the attempt is pending, never failed.
func TestCommandsOfAGraderThatCannotContainThemAreErrored(t *testing.T) {
	e := start(t)
	t.Setenv("PATH", t.TempDir())
	g := e.grader()
	if g.Containment() != nil {
		t.Fatalf("the probe found containment without bash: %+v", g.Containment())
	}
	req := e.publish("grading:\n  instruments:\n    - {id: tests, kind: command, command: ./check.sh}\n" +
		"    - {id: answer, kind: file, path: answer.txt, contains: \"4\"}\n")
	e.attempt("nobash", req, candidate(map[string]string{"answer.txt": "4\n"}))
	must(t, g.Grade(e.ctx, suite, "nobash"))
	v := e.verdict("nobash")
	if r := result(v, "tests"); r.Outcome != events.InstrumentErrored || !strings.Contains(r.Detail, "containment probe") {
		t.Errorf("tests: %+v", r)
	}
	if r := result(v, "answer"); r.Outcome != events.InstrumentPassed {
		t.Errorf("answer: %+v", r)
	}
	if _, ok := v.Result.Variant().(events.VerdictPending); !ok {
		t.Errorf("verdict %s, want pending", v.Result.Type())
	}
	if gi := e.instrumentFacts("nobash")["tests"]; gi.Containment != nil {
		t.Errorf("a command that never ran records containment: %+v", gi.Containment)
	}
}
