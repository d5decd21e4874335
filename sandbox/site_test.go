package sandbox

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/factline/factline/sandbox/sandboxtest"
)

// siteChildEnv makes the test binary a child service (siteChild) that
// the test kills mid-command; its value is the work dir.
const siteChildEnv = "FACTLINE_SANDBOX_SITE_CHILD"

// siteChildImage, when set, is an image the child also starts a container
// of, as an attempt with an environment does.
const siteChildImage = "FACTLINE_SANDBOX_SITE_CHILD_IMAGE"

// siteChildReport is what the child prints once its command runs.
type siteChildReport struct {
	Site      string `json:"site"`
	WS        string `json:"ws"`
	Container string `json:"container"`
}

// siteChild is a runner in miniature: it opens an attempt's site in the
// work dir (and, with an image, the attempt's container)
// and runs a command that leaves a process outside its session and a file
// in a world-writable directory of the work dir, then waits to be killed.
// No attempt mount namespace: the file must reach the host.
func siteChild(work string) {
	fail := func(format string, args ...any) {
		fmt.Fprintf(os.Stderr, format+"\n", args...)
		os.Exit(3)
	}
	ctx := context.Background()
	cfg := DefaultConfig(work)
	cfg.PrivateTmp, cfg.ReadOnlyHost = false, false
	c, err := Probe(ctx, cfg)
	if err != nil {
		fail("probe: %v", err)
	}
	site, err := OpenSite(work, "runner", "run")
	if err != nil {
		fail("%v", err)
	}
	dir := site.Dir()
	ws, home, tmp := filepath.Join(dir, "ws"), filepath.Join(dir, "home"), filepath.Join(dir, "tmp")
	for _, d := range []string{ws, home, tmp} {
		if err := os.Mkdir(d, 0o755); err != nil {
			fail("%v", err)
		}
	}
	rep := siteChildReport{Site: site.Dir(), WS: ws}
	if image := os.Getenv(siteChildImage); image != "" {
		rep.Container = ContainerName("reaptest", "run", uint32(os.Getpid()))
		cws := filepath.Join(dir, "cws")
		if err := os.Mkdir(cws, 0o755); err != nil {
			fail("%v", err)
		}
		if _, err := c.Container(ctx, ContainerSpec{Name: rep.Container, Env: Environment{Image: image}, Workspace: cws, Home: home, Tmp: tmp,
			Labels: map[string]string{LabelSuite: "reaptest", LabelRun: "run"}}); err != nil {
			fail("container: %v", err)
		}
	}
	sb := c.ForAttempt(ws, home, tmp)
	go func() {
		_, _ = sb.Run(ctx, Command{Dir: ws, Env: []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home}, Timeout: time.Hour,
			Script: `setsid sleep 600 < /dev/null > /dev/null 2>&1 & echo $! > escaped.pid
echo left > ` + filepath.Join(work, "shared", "left-by-the-dead") + `
touch ready; sleep 600`})
	}()
	for {
		if _, err := os.Stat(filepath.Join(ws, "ready")); err == nil {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	_ = json.NewEncoder(os.Stdout).Encode(rep)
	select {}
}

// startSiteChild starts siteChild in work and returns its report once its
// command runs.
func startSiteChild(t *testing.T, work, image string) (*exec.Cmd, siteChildReport) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = []string{siteChildEnv + "=" + work, siteChildImage + "=" + image, "PATH=" + os.Getenv("PATH")}
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	var rep siteChildReport
	line, err := bufio.NewReader(out).ReadBytes('\n')
	if err != nil || json.Unmarshal(line, &rep) != nil {
		t.Fatalf("the child service never reported (%v): %q", err, line)
	}
	return cmd, rep
}

// pidIn reads the pid a command wrote to path.
func pidIn(t *testing.T, path string) int {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	return pid
}

// A service SIGKILLed while its command runs leaves its directory, the
// command's process that left the session, a file in a shared place and
// its container. Reap by the next instance of its kind removes all of
// them, and nothing of a live owner (the test's own site, and the process
// of its attempt's user), of an owner in another PID namespace, or of
// another kind.
func TestReapRemovesOnlyWhatDeadOwnersLeft(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skipf("the dead service's commands run as fresh uids, which needs root; the test runs as uid %d", os.Geteuid())
	}
	image := sandboxtest.Image(t, "plain")
	work := reachableDir(t)
	shared := filepath.Join(work, "shared")
	if err := os.Mkdir(shared, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(shared, 0o1777); err != nil {
		t.Fatal(err)
	}
	child, rep := startSiteChild(t, work, image)
	escaped := pidIn(t, filepath.Join(rep.WS, "escaped.pid"))
	t.Cleanup(func() { _ = syscall.Kill(escaped, syscall.SIGKILL) })
	_ = child.Process.Kill()
	_ = child.Wait()
	if gone(escaped) {
		t.Fatal("the command's escaped process died with its service: nothing to reap")
	}
	if left := containersNamed(t, rep.Container); len(left) != 1 {
		t.Fatalf("the dead service's container: %v", left)
	}

	// A live site of the same kind (this process), whose attempt's user
	// has a process running.
	mine, err := OpenSite(work, "runner", "run-x")
	if err != nil {
		t.Fatal(err)
	}
	myWS := filepath.Join(mine.Dir(), "ws")
	if err := os.MkdirAll(myWS, 0o711); err != nil {
		t.Fatal(err)
	}
	myUID := freshUID()
	if err := os.Chown(myWS, int(myUID), int(myUID)); err != nil {
		t.Fatal(err)
	}
	live := exec.Command("sleep", "600")
	live.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: myUID, Gid: myUID}}
	if err := live.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = live.Process.Kill(); _ = live.Wait() })

	me, err := Self()
	if err != nil {
		t.Fatal(err)
	}
	fake := func(kind string, o Owner) string {
		p := filepath.Join(work, sitePrefix(kind)+o.String()+".run-y-1")
		if err := os.MkdirAll(filepath.Join(p, "ws"), 0o711); err != nil {
			t.Fatal(err)
		}
		return p
	}
	reused := fake("runner", Owner{Boot: me.Boot, PIDNS: me.PIDNS, PID: me.PID, Start: me.Start + 1}) // our PID, not our start
	rebooted := fake("runner", Owner{Boot: "0badb007", PIDNS: me.PIDNS, PID: me.PID, Start: me.Start})
	elsewhere := fake("runner", Owner{Boot: me.Boot, PIDNS: me.PIDNS + 1, PID: 1, Start: 1})
	otherKind := fake("grader", Owner{Boot: "0badb007", PIDNS: me.PIDNS, PID: me.PID, Start: me.Start})
	deadProbe := fake(probeKind, Owner{Boot: "0badb007", PIDNS: me.PIDNS, PID: me.PID, Start: me.Start})

	r, err := Reap(context.Background(), work, "runner", Engine{})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("reaped %+v", r)
	for _, p := range []string{rep.Site, reused, rebooted, deadProbe} {
		if _, err := os.Lstat(p); err == nil {
			t.Errorf("%s of a dead owner is left", p)
		}
	}
	for _, p := range []string{mine.Dir(), myWS, elsewhere, otherKind} {
		if _, err := os.Lstat(p); err != nil {
			t.Errorf("%s was removed: %v", p, err)
		}
	}
	if !gone(escaped) {
		t.Errorf("the dead service's command (pid %d) still runs", escaped)
	}
	if gone(live.Process.Pid) {
		t.Errorf("the live site's process was killed")
	}
	if _, err := os.Lstat(filepath.Join(shared, "left-by-the-dead")); err == nil {
		t.Errorf("the file the dead service's command left in a shared place is still there")
	}
	if left := containersNamed(t, rep.Container); len(left) > 0 {
		t.Errorf("the dead service's container is left: %v", left)
	}
	if r.Processes == 0 || r.Files == 0 || len(r.Containers) != 1 || len(r.Dirs) != 4 {
		t.Errorf("reaped %+v, want a process, a file, a container and four directories", r)
	}
	if again, err := Reap(context.Background(), work, "runner", Engine{}); err != nil || !again.Empty() {
		t.Errorf("a second reap: %+v, %v", again, err)
	}
	if err := mine.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(mine.Dir()); err == nil {
		t.Error("Close left the site")
	}
}

// An owner is written and read back whole; names that are not an owner's
// are refused.
func TestOwnerRoundTrips(t *testing.T) {
	me, err := Self()
	if err != nil {
		t.Fatal(err)
	}
	got, err := ParseOwner(me.String())
	if err != nil || got != me {
		t.Fatalf("%s read back as %+v, %v", me, got, err)
	}
	if me.liveness() != ownerAlive {
		t.Errorf("this process is not alive to itself: %+v", me)
	}
	for _, bad := range []string{"", "a.b.c.d", "0badb007.1.2", "0badb007.1.0.3", "0BADB007.1.2.3", "0badb007.1.2.3.4"} {
		if _, err := ParseOwner(bad); err == nil {
			t.Errorf("ParseOwner(%q) succeeded", bad)
		}
	}
	if _, err := OpenSite(reachableDir(t), "../up", "x"); err == nil {
		t.Error("a kind that is no name was accepted")
	}
	for _, label := range []string{"", "a.b", "../x", "a/b"} {
		if _, err := OpenSite(reachableDir(t), "runner", label); err == nil {
			t.Errorf("label %q was accepted", label)
		}
	}
}
