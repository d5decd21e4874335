package runner

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/factline/factline/bus"
	"github.com/factline/factline/bus/bustest"
	"github.com/factline/factline/cases"
	"github.com/factline/factline/events"
	"github.com/factline/factline/fleet/fleettest"
	"github.com/factline/factline/sandbox"
	"github.com/factline/factline/sandbox/sandboxtest"
)

// An attempt owns what it opens: its directory under the work dir, its
// sandbox (a container, when the case names an environment) and its
// extension servers. Whatever stops prepare after the first of them is
// open, none is left behind. These tests make prepare fail for real, on
// a real server, and count what is left.

// preparing is a runner on a real embedded server, not consuming, and a
// run requested of it whose attempt a test prepares by hand.
type preparing struct {
	svc *Service
	b   *bus.Bus
	ctx context.Context
	req events.RunRequested
	run string
}

// newPreparing starts a runner working in workDir and requests run of
// case c.
func newPreparing(t *testing.T, workDir string, c *cases.Case, run string) *preparing {
	t.Helper()
	b, _ := bustest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	svc, err := New(b, WithWorkDir(workDir))
	if err != nil {
		t.Fatal(err)
	}
	tr, err := cases.ParseTreatment("t.yaml", []byte("id: scripted\nmodel: {provider: scripted, scripts: x}\n"))
	if err != nil {
		t.Fatal(err)
	}
	tr.Model.ScriptFiles = map[string]string{c.ID: "turns: []\n"}
	p, err := fleettest.Publish(ctx, b, c, tr)
	if err != nil {
		t.Fatal(err)
	}
	if err := fleettest.Request(ctx, b, "suite", run, p, 1); err != nil {
		t.Fatal(err)
	}
	log, err := b.LoadRun(ctx, "suite", run)
	if err != nil {
		t.Fatal(err)
	}
	req, ok := log.Records[0].Fact.Body.(events.RunRequested)
	if !ok {
		t.Fatalf("the run starts with %s", log.Records[0].Fact.Kind())
	}
	return &preparing{svc: svc, b: b, ctx: ctx, req: req, run: run}
}

// prepare prepares the run's attempt as the runner's handler would.
func (p *preparing) prepare(t *testing.T) (*attempt, error) {
	t.Helper()
	log, err := p.b.LoadRun(p.ctx, "suite", p.run)
	if err != nil {
		t.Fatal(err)
	}
	return p.svc.prepare(p.ctx, "suite", p.run, p.req, log, nil)
}

// attemptDirs lists the directories attempts of run left in workDir
// (factline-…<run>-<random>).
func attemptDirs(t *testing.T, workDir, run string) []string {
	t.Helper()
	entries, err := os.ReadDir(workDir)
	if err != nil {
		t.Fatal(err)
	}
	var dirs []string
	for _, e := range entries {
		if n := e.Name(); e.IsDir() && strings.HasPrefix(n, "factline-") && strings.Contains(n, run+"-") {
			dirs = append(dirs, filepath.Join(workDir, n))
		}
	}
	return dirs
}

// plainCase is a case with no fixture, whose workspace starts empty.
func plainCase(t *testing.T) *cases.Case {
	t.Helper()
	c, err := cases.ParseCase("case.yaml", []byte("id: plain\ninstruction: Say hello.\nbudget: {steps: 2}\n"))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// A work dir on a disk with room for one more directory: the attempt's
// own directory takes it, and HOME inside it cannot be made. The attempt's
// directory goes with the failure.
func TestAnAttemptThatCannotMakeItsDirectoriesLeavesNone(t *testing.T) {
	// The disk is mounted outside the host's shared temporary places
	// (/tmp, /var/tmp, /dev/shm): the runner's containment probe covers
	// those with a tmpfs of its own, and fails on a mount it then finds
	// below it (a sandbox matter, not this test's).
	workDir, err := os.MkdirTemp("/run", "factline-fulldisk-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.Remove(workDir) })
	// A tmpfs with few inodes is a disk that fills, whoever the runner is
	// (root passes any permission check, not a full disk).
	if err := syscall.Mount("tmpfs", workDir, "tmpfs", 0, "size=4m,nr_inodes=256,mode=0711"); err != nil {
		if errors.Is(err, syscall.EPERM) {
			t.Skipf("this host does not let the test mount a tmpfs (%v): no disk that fills", err)
		}
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = syscall.Unmount(workDir, syscall.MNT_DETACH) })
	p := newPreparing(t, workDir, plainCase(t), "full")
	// Fill the disk's inodes, then free one: room for one directory.
	var last string
	for i := 0; ; i++ {
		name := filepath.Join(workDir, fmt.Sprintf("filler-%d", i))
		err := os.WriteFile(name, nil, 0o600)
		if errors.Is(err, syscall.ENOSPC) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		last = name
		if i > 10_000 {
			t.Fatal("the tmpfs never filled")
		}
	}
	if err := os.Remove(last); err != nil {
		t.Fatal(err)
	}

	a, err := p.prepare(t)
	// Usually HOME is the directory refused, but the room the filling left
	// is not always one inode (under make test's load one run found room
	// for HOME and was refused tmp), so any directory of the attempt's own
	// may be the one the full disk refuses: what matters is that none of
	// them stays.
	var pe *fs.PathError
	if !errors.Is(err, syscall.ENOSPC) || !errors.As(err, &pe) || !slices.Contains([]string{"home", "tmp", "ws"}, filepath.Base(pe.Path)) {
		t.Fatalf("prepare: %v, %v; want the full disk refusing a directory of the attempt (home, tmp, ws)", a, err)
	}
	if left := attemptDirs(t, workDir, "full"); len(left) > 0 {
		t.Errorf("the failed attempt left %v", left)
	}
}

// A workspace whose stored tree is missing (a fixture digest no blob
// holds) is bad input: the run cannot start, and the attempt's directory
// goes with it.
func TestAnAttemptWhoseWorkspaceIsMissingLeavesNoDirectory(t *testing.T) {
	workDir := sandboxtest.ReachableDir(t)
	c := plainCase(t)
	c.FixtureDigest = events.DigestOf([]byte("a tree nobody stored"))
	p := newPreparing(t, workDir, c, "nofixture")
	a, err := p.prepare(t)
	if !errors.Is(err, errBadInput) || !strings.Contains(err.Error(), "workspace") {
		t.Fatalf("prepare: %v, %v; want bad input naming the workspace", a, err)
	}
	if left := attemptDirs(t, workDir, "nofixture"); len(left) > 0 {
		t.Errorf("the failed attempt left %v", left)
	}
}

// An attempt whose claim loses the race to the run's end (another runner
// ended it while this one made its container) removes its container and
// its directory: the claim is refused, and nothing of the attempt is left.
func TestAnAttemptWhoseClaimLosesTheRaceLeavesNothingOpen(t *testing.T) {
	image := sandboxtest.Image(t, "plain")
	workDir := sandboxtest.ReachableDir(t)
	c := plainCase(t)
	c.Environment = &cases.Environment{Image: image, Workdir: "/src", Network: cases.NetworkNone, MemoryBytes: 128 << 20, Pids: 64}
	// Container names are the host's: a run name of its own keeps this
	// test's apart from any other's.
	run := fmt.Sprintf("lost%d", time.Now().UnixNano())
	p := newPreparing(t, workDir, c, run)
	t.Cleanup(func() {
		// Whatever this test finds, it leaves no container behind.
		for _, name := range containersOf(t, "suite", run) {
			_ = exec.Command(sandbox.EngineFromEnv().Bin, "rm", "--force", name).Run()
		}
	})
	var during []string
	SetBeforeClaim(t, p.svc, func(ctx context.Context, suite, run string) {
		during = containersOf(t, suite, run)
		endAsOther(t, ctx, p.b, suite, run)
	})
	a, err := p.prepare(t)
	if !errors.Is(err, ErrLeaseLost) {
		t.Fatalf("prepare: %v, %v; want the lease lost to the run's end", a, err)
	}
	if len(during) != 1 {
		t.Fatalf("containers before the claim: %v, want the attempt's", during)
	}
	if left := containersOf(t, "suite", run); len(left) > 0 {
		t.Errorf("the attempt left its container: %v", left)
	}
	if left := attemptDirs(t, workDir, run); len(left) > 0 {
		t.Errorf("the attempt left %v", left)
	}
}

// An attempt closes what it opened once, however often it is told to: the
// second close finds nothing left to close, and fails on nothing.
func TestClosingAnAttemptTwiceIsClosingItOnce(t *testing.T) {
	workDir := sandboxtest.ReachableDir(t)
	p := newPreparing(t, workDir, plainCase(t), "twice")
	a, err := p.prepare(t)
	if err != nil {
		t.Fatal(err)
	}
	if left := attemptDirs(t, workDir, "twice"); len(left) != 1 {
		t.Fatalf("the prepared attempt's directories: %v", left)
	}
	a.close()
	a.close()
	if left := attemptDirs(t, workDir, "twice"); len(left) > 0 {
		t.Errorf("the closed attempt left %v", left)
	}
}

// containersOf lists the engine's containers of one run.
func containersOf(t *testing.T, suite, run string) []string {
	t.Helper()
	e := sandbox.EngineFromEnv()
	out, err := exec.Command(e.Bin, "ps", "--all", "--format", "{{.Names}}",
		"--filter", "label="+sandbox.LabelSuite+"="+suite, "--filter", "label="+sandbox.LabelRun+"="+run).CombinedOutput()
	if err != nil {
		t.Fatalf("%s ps: %v: %s", e.Bin, err, out)
	}
	return strings.Fields(string(out))
}

// endAsOther ends the run as another runner would.
func endAsOther(t *testing.T, ctx context.Context, b *bus.Bus, suite, run string) {
	t.Helper()
	_, err := b.Commit(ctx, nil, suite, run, func(log bus.RunLog) ([]bus.Pending, error) {
		f, err := events.NewFact(events.Meta{Suite: suite, Run: run, TaskGeneration: 1, Position: log.NextPosition(),
			Producer: events.Producer{Service: events.OwnerRunner, Instance: "other"}},
			events.RunEnded{Status: events.RunCancelled, Reason: "cancelled", NextAction: "none"})
		return []bus.Pending{{Fact: f}}, err
	})
	if err != nil {
		t.Fatal(err)
	}
}
