package sandbox

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/factline/factline/events"
	"github.com/factline/factline/sandbox/sandboxtest"
)

// ctrAttempt is one attempt's container sandbox and its directories.
type ctrAttempt struct {
	attempt
	c    *Containment
	name string
}

// containerEnv starts a container of the busybox test image with env's
// limits (its image filled in), for an attempt with a workspace, home and
// tmp in a reachable work dir. The container is removed when the test
// ends; the test fails if removing it fails.
func containerAttempt(t *testing.T, env Environment) ctrAttempt {
	t.Helper()
	if env.Image == "" {
		env.Image = sandboxtest.Image(t, "plain")
	}
	work := reachableDir(t)
	c, err := Probe(context.Background(), Config{Limits: testLimits, Network: true, Unprivileged: true, WorkDir: work})
	if err != nil {
		t.Fatal(err)
	}
	ws, home, tmp := filepath.Join(work, "ws"), filepath.Join(work, "home"), filepath.Join(work, "tmp")
	for _, d := range []string{ws, home, tmp} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	name := ContainerName("sandboxtest", strings.ReplaceAll(t.Name(), "/", "_"), uint32(os.Getpid()))
	sb, err := c.Container(context.Background(), ContainerSpec{Name: name, Env: env, Workspace: ws, Home: home, Tmp: tmp,
		Labels: map[string]string{LabelSuite: "sandboxtest", LabelRun: name}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := sb.Close(context.Background()); err != nil {
			t.Errorf("close: %v", err)
		}
		if left := containersNamed(t, name); len(left) > 0 {
			t.Errorf("container %s left after Close: %v", name, left)
		}
	})
	return ctrAttempt{attempt: attempt{t: t, sb: sb, ws: ws, home: home}, c: c, name: name}
}

// containersNamed lists the engine's containers of exactly that name.
func containersNamed(t *testing.T, name string) []string {
	t.Helper()
	out, err := EngineFromEnv().output(context.Background(), "ps", "--all", "--format", "{{.Names}}", "--filter", "name=^"+name+"$")
	if err != nil {
		t.Fatal(err)
	}
	return strings.Fields(out)
}

func recorded(t *testing.T, sb *Sandbox, name string) events.ContainmentFeature {
	t.Helper()
	f, ok := sb.Record().Feature(name)
	if !ok {
		t.Fatalf("feature %s not recorded: %+v", name, sb.Record())
	}
	return f
}

// A command sees the image's file system, not the host's: a file only the
// image has is there, a file of the host is not; the workspace is mounted
// where the environment says, and what a command writes there is in the
// host's workspace. The record names the image by digest and its limits
// are the ones a command reads back.
func TestContainerSeesTheImageNotTheHost(t *testing.T) {
	hostOnly := filepath.Join(reachableDir(t), "host-only")
	if err := os.WriteFile(hostOnly, []byte("host"), 0o644); err != nil {
		t.Fatal(err)
	}
	a := containerAttempt(t, Environment{Workdir: "/work", Memory: 256 << 20, MilliCPUs: 500, Pids: 64})
	res := a.run(`cat `+sandboxtest.ImageMarker+`; test -e `+hostOnly+` && echo host-visible; pwd; echo made > out.txt; `+
		`ulimit -t; ulimit -v; ulimit -n; ulimit -u; id -u; echo $HOME $TMPDIR`, time.Minute)
	if failed(res) {
		t.Fatalf("%+v", res)
	}
	lines := strings.Split(strings.TrimSpace(res.Output), "\n")
	if len(lines) != 8 || lines[0] != "plain" || strings.Contains(res.Output, "host-visible") || lines[1] != "/work" {
		t.Fatalf("the command should see the image's marker, not %s, and start in /work: %q", hostOnly, res.Output)
	}
	if b, err := os.ReadFile(filepath.Join(a.ws, "out.txt")); err != nil || string(b) != "made\n" {
		t.Fatalf("the workspace write is not on the host: %q %v", b, err)
	}
	if lines[7] != ContainerHome+" "+ContainerTmp {
		t.Errorf("HOME and TMPDIR: %q", lines[7])
	}
	rec := a.sb.Record()
	want, err := EngineFromEnv().ResolveImage(context.Background(), sandboxtest.Image(t, "plain"))
	if err != nil {
		t.Fatal(err)
	}
	if rec.Provider != "container" || rec.Image == nil || rec.Image.Digest != want {
		t.Fatalf("record %+v, want provider container and image %s", rec, want)
	}
	if _, err := events.NewFact(events.Meta{Suite: "s", Run: "r", TaskGeneration: 1, Position: 2,
		Producer: events.Producer{Service: events.OwnerRunner, Instance: "r"}}, events.RunClaimed{Runner: "r", Lease: 1, Containment: rec}); err != nil {
		t.Fatalf("the record is not a valid run.claimed: %v", err)
	}
	for i, name := range []string{FeatureCPU, FeatureAddressSpace, FeatureOpenFiles, FeatureProcesses} {
		f := recorded(t, a.sb, name)
		seen, _ := strconv.ParseUint(lines[2+i], 10, 64)
		if name == FeatureAddressSpace {
			seen *= 1024
		}
		if f.State != events.ContainmentActive || f.Limit != seen {
			t.Errorf("%s: recorded %+v, the command sees %s", name, f, lines[2+i])
		}
	}
	if uid, _ := strconv.Atoi(lines[6]); uid == 0 || uint32(uid) != a.sb.UID() {
		t.Errorf("the command runs as uid %d, the attempt's is %d", uid, a.sb.UID())
	}
	cg := a.run(`cat /sys/fs/cgroup/memory/memory.limit_in_bytes /sys/fs/cgroup/pids/pids.max 2>/dev/null || cat /sys/fs/cgroup/memory.max /sys/fs/cgroup/pids.max`, time.Minute)
	got := strings.Fields(cg.Output)
	if len(got) != 2 {
		t.Fatalf("cgroup files: %q", cg.Output)
	}
	for i, name := range []string{FeatureMemory, FeaturePids} {
		f := recorded(t, a.sb, name)
		if f.State != events.ContainmentActive || strconv.FormatUint(f.Limit, 10) != got[i] {
			t.Errorf("%s: recorded %+v, the cgroup says %s", name, f, got[i])
		}
	}
	if f := recorded(t, a.sb, FeatureCPUQuota); f.State != events.ContainmentActive || f.Limit != 500 {
		t.Errorf("cpu quota: %+v, want 500 millis", f)
	}
}

// Without network a command reaches nothing: not a listener on the host's
// loopback, not even its own loopback. With loopback, its own loopback
// works and the host's still is out of reach.
func TestContainerHasNoNetwork(t *testing.T) {
	ln := sandboxtest.Listen(t)
	port := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
	dial := `echo hi | nc -w 2 127.0.0.1 ` + port + ` && echo connected`

	none := containerAttempt(t, Environment{})
	if f := recorded(t, none.sb, FeatureNetwork); f.State != events.ContainmentActive || !strings.Contains(f.Detail, "loopback down") {
		t.Fatalf("network: %+v", f)
	}
	res := none.run(dial, time.Minute)
	if !failed(res) || strings.Contains(res.Output, "connected") {
		t.Fatalf("a command without network reached 127.0.0.1:%s: %+v", port, res)
	}
	if res := none.run(`cat /sys/class/net/lo/operstate /sys/class/net/lo/flags`, time.Minute); !strings.Contains(res.Output, "0x8\n") {
		t.Errorf("the loopback should be down: %q", res.Output)
	}

	lo := containerAttempt(t, Environment{Network: NetworkLoopback})
	if f := recorded(t, lo.sb, FeatureNetwork); f.State != events.ContainmentActive || !strings.Contains(f.Detail, "own loopback") {
		t.Fatalf("network: %+v", f)
	}
	res = lo.run(dial, time.Minute)
	if !failed(res) || strings.Contains(res.Output, "connected") {
		t.Fatalf("a command with its own loopback reached the host's 127.0.0.1:%s: %+v", port, res)
	}
	// The client retries until the listener is up (at most 200 tries),
	// and the listener's exit is waited for, so nothing depends on timing.
	// The listener reads a FIFO held open: with stdin at EOF it would shut
	// its side at once, and a client seeing that EOF may leave before
	// sending (2 in 100 under load did).
	own := lo.run(`mkfifo in; nc -l -p 9999 < in > got.txt & l=$!; exec 3> in
for i in $(seq 200); do echo inside | nc -w 1 127.0.0.1 9999 && break; sleep 0.05; done
wait $l; exec 3>&-; cat got.txt`, time.Minute)
	if !strings.Contains(own.Output, "inside") {
		t.Errorf("the container's own loopback should work: %+v", own)
	}
	if ln.Accepted() != 0 {
		t.Errorf("the host's listener accepted %d connections", ln.Accepted())
	}
}

// An allocation past the memory limit fails (the kernel kills it), one
// well within it succeeds, so the failure is the limit.
func TestContainerMemoryLimit(t *testing.T) {
	a := containerAttempt(t, Environment{Memory: 64 << 20})
	if f := recorded(t, a.sb, FeatureMemory); f.State != events.ContainmentActive {
		t.Fatalf("memory: %+v", f)
	}
	if small := a.run(`dd if=/dev/zero of=/dev/null bs=16M count=1`, time.Minute); failed(small) {
		t.Fatalf("16 MiB under a 64 MiB limit: %+v", small)
	}
	hog := a.run(`dd if=/dev/zero of=/dev/null bs=200M count=1`, time.Minute)
	if hog.TimedOut || hog.ExitCode == 0 {
		t.Fatalf("200 MiB under a 64 MiB limit: %+v", hog)
	}
	t.Logf("the hog ended: exit %d: %s", hog.ExitCode, hog.Output)
	// The engine's OOM marker lands beside the attempt's directories,
	// never in the service's working directory.
	if _, err := os.Stat("oom"); err == nil {
		_ = os.Remove("oom")
		t.Error("the engine wrote an oom file into the service's working directory")
	}
}

// A fork bomb hits the limits, ends (at the latest at the timeout), leaves no process of
// the attempt behind, and the container still runs the next command.
func TestContainerForkBombIsContained(t *testing.T) {
	a := containerAttempt(t, Environment{Pids: 64})
	// In the foreground, so that the command itself is still running
	// when the forks start failing: the engine's exec ends with its main
	// process, and output written after that is not the call's.
	res := a.run(`bomb() { bomb | bomb; }; bomb`, 3*time.Second)
	if !strings.Contains(res.Output, "can't fork") && !strings.Contains(res.Output, "Resource temporarily unavailable") {
		t.Errorf("the bomb never hit a limit: %q", res.Output)
	}
	if left := processesOf(a.sb.UID()); len(left) > 0 {
		t.Errorf("%d processes of uid %d survived the call", len(left), a.sb.UID())
	}
	if next := a.run(`echo alive`, time.Minute); failed(next) || !strings.Contains(next.Output, "alive") {
		t.Fatalf("the container should run the next command: %+v", next)
	}
}

// A timed-out command's children, also one that left the session, are
// gone: the next command finds no process of the attempt but itself.
func TestContainerTimeoutKillsChildren(t *testing.T) {
	a := containerAttempt(t, Environment{})
	res := a.run(`trap '' TERM; sleep 300 & setsid sleep 301 & echo started; wait`, 2*time.Second)
	if !res.TimedOut || !strings.Contains(res.Output, "started") {
		t.Fatalf("want a timeout after the children started: %+v", res)
	}
	if left := processesOf(a.sb.UID()); len(left) > 0 {
		t.Errorf("%d processes of uid %d survived the timeout", len(left), a.sb.UID())
	}
	ps := a.run(`ps -o user,args`, time.Minute)
	if strings.Contains(ps.Output, "sleep 30") {
		t.Errorf("a child survived in the container:\n%s", ps.Output)
	}
}

// A missing image is an ImageError naming it, before any container is
// made.
func TestContainerOfAMissingImage(t *testing.T) {
	work := reachableDir(t)
	c, err := Probe(context.Background(), Config{Limits: testLimits, WorkDir: work})
	if err != nil {
		t.Fatal(err)
	}
	name := ContainerName("sandboxtest", "missing", uint32(os.Getpid()))
	_, err = c.Container(context.Background(), ContainerSpec{Name: name, Env: Environment{Image: "localhost/factline-no-such-image:1"},
		Workspace: work, Home: work, Tmp: work})
	var ie *ImageError
	if !errors.As(err, &ie) || !errors.Is(err, ErrImageMissing) || ie.Image != "localhost/factline-no-such-image:1" {
		t.Fatalf("want an ImageError naming the image, got %v", err)
	}
	if left := containersNamed(t, name); len(left) > 0 {
		t.Errorf("a container was made for a missing image: %v", left)
	}
}
