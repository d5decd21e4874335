package sandbox

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/factline/factline/events"
	"github.com/factline/factline/sandbox/sandboxtest"
)

func reachableDir(t *testing.T) string { return sandboxtest.ReachableDir(t) }

// testLimits are small enough to hit on purpose.
var testLimits = Limits{CPUSeconds: 30, AddressSpace: 256 << 20, OpenFiles: 64, Processes: 32}

// attempt is one attempt's sandbox and its directories.
type attempt struct {
	t    *testing.T
	sb   *Sandbox
	ws   string
	home string
}

// sandboxEnv probes containment as cfg asks (in a reachable work dir) and
// returns an attempt in it: a workspace and a HOME handed to the attempt's
// user.
func sandboxEnv(t *testing.T, cfg Config) (attempt, *Containment, string) {
	t.Helper()
	work := reachableDir(t)
	if cfg.WorkDir == "" {
		cfg.WorkDir = work
	}
	c, err := Probe(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	ws, home := filepath.Join(work, "ws"), filepath.Join(work, "home")
	for _, d := range []string{ws, home} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	sb := c.ForAttempt(ws, home)
	t.Cleanup(func() { sb.killAll() })
	return attempt{t: t, sb: sb, ws: ws, home: home}, c, ws
}

// run runs script in the attempt's workspace with a minimal environment.
func (a attempt) run(script string, timeout time.Duration) Result {
	a.t.Helper()
	res, err := a.sb.Run(context.Background(), Command{Script: script, Dir: a.ws,
		Env: []string{"PATH=" + os.Getenv("PATH"), "HOME=" + a.home}, Timeout: timeout, OutputCap: 4096})
	if err != nil {
		a.t.Fatalf("run %q: %v", script, err)
	}
	return res
}

// failed reports whether a command did not exit 0 in time.
func failed(r Result) bool { return r.TimedOut || r.ExitCode != 0 }

func allFeatures() Config {
	return Config{Limits: testLimits, Network: true, Unprivileged: true}
}

func feature(t *testing.T, c *Containment, name string) events.ContainmentFeature {
	t.Helper()
	f, ok := c.Record().Feature(name)
	if !ok {
		t.Fatalf("feature %s not recorded: %+v", name, c.Record())
	}
	switch f.State {
	case events.ContainmentActive:
	case events.ContainmentUnsupported:
		if f.Detail == "" {
			t.Errorf("feature %s is unsupported without saying why", name)
		}
	default:
		t.Errorf("feature %s: state %q, want active or unsupported (it was asked for)", name, f.State)
	}
	return f
}

// need returns the feature a test of what it contains needs: active, or
// the test is skipped where the host provably cannot give it (saying why)
// and fails everywhere else (sandboxtest.NeedActive). asked is the limit
// asked for, for a resource limit.
func need(t *testing.T, c *Containment, name string, asked uint64) events.ContainmentFeature {
	t.Helper()
	f := feature(t, c, name)
	sandboxtest.NeedActive(t, f, asked)
	return f
}

// The record says what a command really gets: every limit it reads back
// from inside equals the recorded one, the command leads its own session,
// and the uid it runs as is not root exactly when the record says so.
func TestContainmentRecordMatchesWhatACommandSees(t *testing.T) {
	env, c, _ := sandboxEnv(t, allFeatures())
	rec := c.Record()
	t.Logf("containment: %+v", *rec)
	if _, err := events.NewFact(events.Meta{Suite: "s", Run: "r", TaskGeneration: 1, Position: 2,
		Producer: events.Producer{Service: events.OwnerRunner, Instance: "r"}}, events.RunClaimed{Runner: "r", Lease: 1, Containment: rec}); err != nil {
		t.Fatalf("the record is not a valid run.claimed: %v", err)
	}
	res := env.run(`ulimit -t; ulimit -v; ulimit -n; ulimit -u; id -u; read -r -a f < /proc/$$/stat; echo "${f[5]} $$"`, time.Minute)
	if failed(res) {
		t.Fatalf("%+v: %s", res, res.Output)
	}
	lines := strings.Split(strings.TrimSpace(res.Output), "\n")
	if len(lines) != 6 {
		t.Fatalf("output %q", res.Output)
	}
	for i, name := range []string{FeatureCPU, FeatureAddressSpace, FeatureOpenFiles} {
		f := feature(t, c, name)
		seen, _ := strconv.ParseUint(lines[i], 10, 64)
		if name == FeatureAddressSpace {
			seen *= 1024
		}
		if f.State == events.ContainmentActive && f.Limit != seen {
			t.Errorf("%s: recorded %d, the command sees %s", name, f.Limit, lines[i])
		}
	}
	uid, _ := strconv.Atoi(lines[4])
	user := feature(t, c, FeatureUser)
	if (user.State == events.ContainmentActive) != (uid != 0) {
		t.Errorf("unprivileged_user %s, but the command runs as uid %d", user.State, uid)
	}
	procs := feature(t, c, FeatureProcesses)
	if procs.State == events.ContainmentActive && (uid == 0 || lines[3] != strconv.FormatUint(procs.Limit, 10)) {
		t.Errorf("processes recorded active at %d, the command runs as uid %d with ulimit -u %s", procs.Limit, uid, lines[3])
	}
	if uid == 0 && procs.State != events.ContainmentUnsupported {
		t.Errorf("the command runs as root, yet the process limit is recorded %s", procs.State)
	}
	sid := strings.Fields(lines[5])
	if len(sid) != 2 || sid[0] != sid[1] {
		t.Errorf("the command does not lead its own session: sid, pid = %v", sid)
	}
	if f := feature(t, c, FeatureSession); f.State != events.ContainmentActive {
		t.Errorf("session: %+v", f)
	}
}

// A feature the host cannot give is recorded unsupported with the reason,
// never claimed: here the work dir is closed to other users, so a fresh
// uid cannot reach it, and as root the process limit then cannot bind.
func TestUnreachableWorkDirMakesTheUserUnsupported(t *testing.T) {
	if os.Geteuid() != 0 {
		c, err := Probe(context.Background(), Config{Limits: testLimits, Unprivileged: true, WorkDir: t.TempDir()})
		if err != nil {
			t.Fatal(err)
		}
		// Not root: commands run as the runner's own user, which is not root.
		if f := feature(t, c, FeatureUser); f.State != events.ContainmentActive {
			t.Errorf("unprivileged_user: %+v", f)
		}
		return
	}
	closed := t.TempDir() // 0700, owned by root
	c, err := Probe(context.Background(), Config{Limits: testLimits, Unprivileged: true, WorkDir: closed})
	if err != nil {
		t.Fatal(err)
	}
	if f := feature(t, c, FeatureUser); f.State != events.ContainmentUnsupported || !strings.Contains(f.Detail, closed) {
		t.Errorf("unprivileged_user: %+v, want unsupported naming %s", f, closed)
	}
	if f := feature(t, c, FeatureProcesses); f.State != events.ContainmentUnsupported || !strings.Contains(f.Detail, "root") {
		t.Errorf("processes: %+v, want unsupported (root)", f)
	}
	if f, _ := c.Record().Feature(FeatureNetwork); f.State != events.ContainmentOff {
		t.Errorf("network_isolation was not asked for: %+v", f)
	}
}

// A fork bomb hits the process limit, ends with the call's timeout, and
// leaves no process of the attempt's user behind.
func TestForkBombIsContained(t *testing.T) {
	env, c, _ := sandboxEnv(t, allFeatures())
	// Without a binding process limit a fork bomb would take the machine
	// down: the bomb goes off only under one.
	need(t, c, FeatureProcesses, testLimits.Processes)
	res := env.run(`bomb() { bomb | bomb & }; bomb; wait`, 3*time.Second)
	if !failed(res) {
		t.Fatalf("fork bomb: %+v", res)
	}
	if !strings.Contains(res.Output, "Resource temporarily unavailable") {
		t.Errorf("the bomb never hit the process limit: %q", res.Output)
	}
	if left := processesOf(env.sb.UID()); len(left) > 0 {
		t.Errorf("%d processes of uid %d survived the call", len(left), env.sb.UID())
	}
}

// A memory hog fails at the address-space limit; the same program asking
// for little memory succeeds, so the failure is the limit.
func TestMemoryHogFailsAtAddressSpaceLimit(t *testing.T) {
	env, c, _ := sandboxEnv(t, allFeatures())
	f := need(t, c, FeatureAddressSpace, testLimits.AddressSpace)
	small := env.run(`dd if=/dev/zero of=/dev/null bs=16M count=1`, time.Minute)
	if failed(small) {
		t.Fatalf("dd of 16 MiB failed: %+v", small)
	}
	hog := env.run(`dd if=/dev/zero of=/dev/null bs=512M count=1`, time.Minute)
	if hog.TimedOut || hog.ExitCode == 0 || !strings.Contains(hog.Output, "memory exhausted") {
		t.Fatalf("a 512 MiB buffer under a %d byte limit: %+v", f.Limit, hog)
	}
}

// A command that ignores SIGTERM, its child and a grandchild that left the
// session are all gone when the call times out.
func TestTimeoutKillsSessionAndEscapees(t *testing.T) {
	env, c, ws := sandboxEnv(t, allFeatures())
	script := `trap '' TERM
(trap '' TERM; exec sleep 300) & echo $! > child.pid
setsid bash -c 'trap "" TERM; echo $$ > escaped.pid; exec sleep 300' &
until [ -s escaped.pid ]; do sleep 0.05; done
wait`
	res := env.run(script, 2*time.Second)
	if !res.TimedOut || res.Cancelled {
		t.Fatalf("want a timeout, got %+v", res)
	}
	user := feature(t, c, FeatureUser)
	for _, name := range []string{"child.pid", "escaped.pid"} {
		b, err := os.ReadFile(filepath.Join(ws, name))
		if err != nil {
			t.Fatal(err)
		}
		pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
		if !gone(pid) {
			if name == "escaped.pid" && user.State != events.ContainmentActive {
				// Without a user of its own a process that left the
				// session cannot be found: that is what unsupported
				// says, and the escapee's half of the test needs one.
				_ = syscall.Kill(pid, syscall.SIGKILL)
				sandboxtest.NeedActive(t, user, 0)
			}
			t.Errorf("%s (pid %d) survived the timeout", name, pid)
		}
	}
}

// gone reports whether pid is dead or a zombie.
func gone(pid int) bool {
	if syscall.Kill(pid, 0) != nil {
		return true
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i > 0 && i+2 < len(s) && s[i+2] == 'Z'
}

// With network isolation a command cannot reach a listener on the
// runner's loopback; without it, the same command can.
func TestNetworkIsolationBlocksLoopback(t *testing.T) {
	ln := sandboxtest.Listen(t)
	port := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
	dial := `exec 3<>/dev/tcp/127.0.0.1/` + port + ` && echo connected`

	open, _, _ := sandboxEnv(t, Config{Limits: testLimits, Unprivileged: true})
	res := open.run(dial, time.Minute)
	if failed(res) || !strings.Contains(res.Output, "connected") {
		t.Fatalf("without isolation the command should connect: %+v", res)
	}
	before := ln.Accepted()

	env, c, _ := sandboxEnv(t, allFeatures())
	need(t, c, FeatureNetwork, 0)
	res = env.run(dial, time.Minute)
	if !failed(res) || strings.Contains(res.Output, "connected") || ln.Accepted() != before {
		t.Fatalf("an isolated command reached 127.0.0.1:%s: %+v", port, res)
	}
}

// The attempt's user writes its workspace (also files the runner wrote)
// and nothing that only root may write.
func TestAttemptUserOwnsOnlyItsDirectories(t *testing.T) {
	env, c, ws := sandboxEnv(t, allFeatures())
	if err := os.WriteFile(filepath.Join(ws, "by-runner.txt"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	outside := reachableDir(t)
	if err := os.Chmod(outside, 0o755); err != nil {
		t.Fatal(err)
	}
	// A hard link in the workspace to a file outside must not hand that
	// file over.
	precious := filepath.Join(outside, "precious")
	if err := os.WriteFile(precious, []byte("root's"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(precious, filepath.Join(ws, "link")); err != nil {
		t.Fatal(err)
	}
	res := env.run(`echo y >> by-runner.txt && mkdir -p sub && echo z > sub/new.txt && echo ok`, time.Minute)
	if failed(res) || !strings.Contains(res.Output, "ok") {
		t.Fatalf("writing the workspace: %+v", res)
	}
	if uid, _ := owner(precious); uid != uint32(os.Geteuid()) {
		t.Errorf("a file outside the workspace was handed to uid %d through a hard link", uid)
	}
	res = env.run(`echo pwned > `+filepath.Join(outside, "x"), time.Minute)
	_, statErr := os.Stat(filepath.Join(outside, "x"))
	if user := feature(t, c, FeatureUser); user.State != events.ContainmentActive {
		if statErr != nil {
			t.Errorf("as the runner's user the write should have worked: %+v", res)
		}
		// What the attempt's user may not write needs a user of its own.
		sandboxtest.NeedActive(t, user, 0)
	}
	if !failed(res) || statErr == nil {
		t.Errorf("the attempt's user wrote a root-owned directory: %+v", res)
	}
}
