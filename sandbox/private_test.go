package sandbox

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/factline/factline/events"
)

// hostAttempt is an attempt laid out as the runner lays one out: a
// directory of its own below the work dir (others may pass through it,
// not list it) holding the workspace, HOME and TMPDIR, all three handed
// to the attempt's user.
type hostAttempt struct {
	t                  *testing.T
	sb                 *Sandbox
	dir, ws, home, tmp string
}

// newHostAttempt makes an attempt of c in work.
func newHostAttempt(t *testing.T, c *Containment, work string) hostAttempt {
	t.Helper()
	dir, err := os.MkdirTemp(work, "attempt-")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o711); err != nil {
		t.Fatal(err)
	}
	a := hostAttempt{t: t, dir: dir, ws: filepath.Join(dir, "ws"), home: filepath.Join(dir, "home"), tmp: filepath.Join(dir, "tmp")}
	for _, d := range []string{a.ws, a.home, a.tmp} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	a.sb = c.ForAttempt(a.ws, a.home, a.tmp)
	t.Cleanup(func() { _ = a.sb.Close(context.Background()) })
	return a
}

// run runs script in the attempt's workspace, with HOME and TMPDIR its own.
func (a hostAttempt) run(script string) Result {
	a.t.Helper()
	res, err := a.sb.Run(context.Background(), Command{Script: script, Dir: a.ws, Timeout: time.Minute, OutputCap: 1 << 16,
		Env: []string{"PATH=" + os.Getenv("PATH"), "HOME=" + a.home, "TMPDIR=" + a.tmp}})
	if err != nil {
		a.t.Fatalf("run %q: %v", script, err)
	}
	return res
}

// uniqueName is a file name no other test (or helper) uses.
func uniqueName(t *testing.T) string {
	t.Helper()
	var b [6]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatal(err)
	}
	return "factline-test-" + hex.EncodeToString(b[:])
}

// existsOnHost reports whether path exists in the test's (the service's)
// view of the file system, and removes it if so, so that a failing run
// leaves nothing behind.
func existsOnHost(t *testing.T, path string) bool {
	t.Helper()
	_, err := os.Lstat(path)
	if err == nil {
		t.Cleanup(func() { _ = os.RemoveAll(path) })
		return true
	}
	if !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("stat %s: %v", path, err)
	}
	return false
}

// rootOrSkip skips the test when it does not run as root and the record
// says the feature is unsupported (the proven lack of a feature that needs
// root, never a silent pass); not root, the record must say so.
func rootOrSkip(t *testing.T, c *Containment, name string) {
	t.Helper()
	if os.Geteuid() == 0 {
		return
	}
	f, _ := c.Record().Feature(name)
	if f.State != events.ContainmentUnsupported || f.Detail == "" {
		t.Fatalf("not root (uid %d), yet %s is recorded %+v", os.Geteuid(), name, f)
	}
	t.Skipf("%s needs root and the test runs as uid %d; the record says so: %s", name, os.Geteuid(), f.Detail)
}

// recordActive fails the test unless the feature is recorded active, and
// returns it.
func recordActive(t *testing.T, c *Containment, name string) events.ContainmentFeature {
	t.Helper()
	f, ok := c.Record().Feature(name)
	if !ok {
		t.Errorf("feature %s is not recorded: %+v", name, c.Record())
	} else if f.State != events.ContainmentActive {
		t.Errorf("%s is %s: %s", name, f.State, f.Detail)
	}
	return f
}

// bothWays runs a test under the default containment and under one without
// the attempt's mount namespace (as on a host that refuses it): the
// protections that do not need the namespace must hold either way.
func bothWays(t *testing.T, test func(t *testing.T, cfg func(work string) Config)) {
	t.Run("namespace", func(t *testing.T) { test(t, DefaultConfig) })
	t.Run("no namespace", func(t *testing.T) {
		test(t, func(work string) Config {
			cfg := DefaultConfig(work)
			cfg.PrivateTmp, cfg.ReadOnlyHost, cfg.PrivateProc = false, false, false
			return cfg
		})
	})
}

// What a command writes to /tmp, /var/tmp and /dev/shm stays in its
// attempt: a later command of the attempt reads it, the host never sees it,
// and nothing of it is left once the attempt ends.
func TestTmpWritesStayInTheAttempt(t *testing.T) {
	work := reachableDir(t)
	c, err := Probe(context.Background(), DefaultConfig(work))
	if err != nil {
		t.Fatal(err)
	}
	rootOrSkip(t, c, FeaturePrivateTmp)
	a := newHostAttempt(t, c, work)
	name := uniqueName(t)
	places := []string{"/tmp", "/var/tmp", "/dev/shm"}
	var write, read strings.Builder
	for _, p := range places {
		write.WriteString("echo " + p + " > " + filepath.Join(p, name) + "\n")
		read.WriteString("cat " + filepath.Join(p, name) + "\n")
	}
	hostHas := func() []string {
		var seen []string
		for _, p := range places {
			if existsOnHost(t, filepath.Join(p, name)) {
				seen = append(seen, filepath.Join(p, name))
			}
		}
		return seen
	}
	if res := a.run(write.String()); failed(res) {
		t.Fatalf("writing /tmp, /var/tmp and /dev/shm: %+v", res)
	}
	if seen := hostHas(); len(seen) > 0 {
		t.Fatalf("the host sees what the command wrote: %v", seen)
	}
	if res := a.run(read.String()); failed(res) || res.Output != "/tmp\n/var/tmp\n/dev/shm\n" {
		t.Errorf("a later command of the attempt reads %q (%+v), want what the first wrote", res.Output, res)
	}
	if err := a.sb.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if seen := hostHas(); len(seen) > 0 {
		t.Fatalf("left after the attempt: %v", seen)
	}
	if f := recordActive(t, c, FeaturePrivateTmp); f.Limit == 0 {
		t.Errorf("private_tmp records no size: %+v", f)
	}
}

// A command cannot write a file past the file-size limit (RLIMIT_FSIZE):
// the write fails (SIGXFSZ, or EFBIG where the signal is ignored), while a
// file of exactly the limit is written. The files are sparse: the test
// writes one byte at the offset.
func TestFileSizeLimit(t *testing.T) {
	work := reachableDir(t)
	c, err := Probe(context.Background(), DefaultConfig(work))
	if err != nil {
		t.Fatal(err)
	}
	// The default limit, in force whether or not the record says so.
	limit := uint64(1 << 30)
	a := newHostAttempt(t, c, work)
	at := strconv.FormatUint(limit-1, 10)
	if res := a.run(`dd if=/dev/zero of=fits bs=1 count=1 seek=` + at + ` 2>&1`); failed(res) {
		t.Fatalf("a file of exactly the limit (%d bytes): %+v", limit, res)
	}
	if fi, err := os.Stat(filepath.Join(a.ws, "fits")); err != nil || uint64(fi.Size()) != limit {
		t.Fatalf("fits: %v %v", fi, err)
	}
	past := strconv.FormatUint(limit, 10)
	for _, where := range []string{"big", "$TMPDIR/big"} {
		res := a.run(`dd if=/dev/zero of=` + where + ` bs=1 count=1 seek=` + past + ` 2>&1`)
		// dd is killed by SIGXFSZ (bash says "File size limit exceeded"
		// and exits 128+25) or, ignoring it, fails with EFBIG.
		xfsz := res.Signal == syscall.SIGXFSZ || res.ExitCode == 128+int(syscall.SIGXFSZ)
		if !xfsz && !strings.Contains(res.Output, "File too large") {
			t.Errorf("a file of %d bytes in %s under a %d byte limit: %+v", limit+1, where, limit, res)
		}
	}
	for _, p := range []string{filepath.Join(a.ws, "big"), filepath.Join(a.tmp, "big")} {
		if fi, err := os.Stat(p); err == nil && uint64(fi.Size()) > limit {
			t.Errorf("%s is %d bytes, past the limit", p, fi.Size())
		}
	}
	if f := recordActive(t, c, FeatureFileSize); f.Limit != limit {
		t.Errorf("file_size_bytes: %+v, want active at %d", f, limit)
	}
}

// A command cannot list or read the workspace, HOME or TMPDIR of an
// attempt running beside it, nor list the directories above them.
func TestAnAttemptCannotReadAnother(t *testing.T) {
	bothWays(t, testAnAttemptCannotReadAnother)
}

func testAnAttemptCannotReadAnother(t *testing.T, config func(string) Config) {
	work := reachableDir(t)
	c, err := Probe(context.Background(), config(work))
	if err != nil {
		t.Fatal(err)
	}
	rootOrSkip(t, c, FeatureWorkspace)
	mine, theirs := newHostAttempt(t, c, work), newHostAttempt(t, c, work)
	secret := uniqueName(t)
	if err := os.WriteFile(filepath.Join(theirs.ws, "secret.txt"), []byte(secret), 0o644); err != nil {
		t.Fatal(err)
	}
	// The other attempt runs a command, so that its directories are
	// handed to its user as they are while it works.
	if res := theirs.run(`cat secret.txt > "$HOME/copy" && cp secret.txt "$TMPDIR/copy" && echo ok`); failed(res) {
		t.Fatalf("the other attempt: %+v", res)
	}
	for _, target := range []struct{ verb, path string }{
		{"ls", theirs.ws}, {"cat", filepath.Join(theirs.ws, "secret.txt")},
		{"ls", theirs.home}, {"cat", filepath.Join(theirs.home, "copy")},
		{"ls", theirs.tmp}, {"cat", filepath.Join(theirs.tmp, "copy")},
		{"ls", theirs.dir}, {"ls", work},
	} {
		res := mine.run(target.verb + " " + target.path + " 2>&1")
		// An error message names the path it was given: what else it
		// shows is what the command saw.
		seen := strings.ReplaceAll(res.Output, target.path, "")
		for _, leak := range []string{secret, "secret.txt", "copy", filepath.Base(theirs.dir)} {
			if strings.Contains(seen, leak) {
				t.Errorf("%s %s shows the other attempt: %q", target.verb, target.path, res.Output)
			}
		}
		if !failed(res) {
			t.Errorf("%s %s succeeded: %q", target.verb, target.path, res.Output)
		}
	}
	recordActive(t, c, FeatureWorkspace)
}

// A command cannot read the command line of a process that is not its
// own (here the test's own process, which runs as another user).
func TestOtherProcessesAreHidden(t *testing.T) {
	work := reachableDir(t)
	c, err := Probe(context.Background(), DefaultConfig(work))
	if err != nil {
		t.Fatal(err)
	}
	rootOrSkip(t, c, FeaturePrivateProc)
	a := newHostAttempt(t, c, work)
	self := strconv.Itoa(os.Getpid())
	res := a.run(`cat /proc/` + self + `/cmdline | tr '\0' ' '`)
	if strings.Contains(res.Output, filepath.Base(os.Args[0])) {
		t.Fatalf("the command reads the test's command line: %q", res.Output)
	}
	// Its own processes it still sees.
	if res := a.run(`cat /proc/$$/cmdline | tr '\0' ' '`); !strings.Contains(res.Output, "bash") {
		t.Errorf("the command cannot read its own command line: %+v", res)
	}
	recordActive(t, c, FeaturePrivateProc)
}

// Whatever the attempt's user wrote outside its own directories, in
// places every user may write, is gone once the attempt ends: the shared
// directories of the host and a world-writable directory in the work dir.
func TestFilesLeftInSharedPlacesAreRemoved(t *testing.T) {
	bothWays(t, testFilesLeftInSharedPlacesAreRemoved)
}

func testFilesLeftInSharedPlacesAreRemoved(t *testing.T, config func(string) Config) {
	work := reachableDir(t)
	c, err := Probe(context.Background(), config(work))
	if err != nil {
		t.Fatal(err)
	}
	rootOrSkip(t, c, FeatureLeftovers)
	shared := filepath.Join(work, "shared")
	if err := os.Mkdir(shared, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(shared, 0o1777); err != nil {
		t.Fatal(err)
	}
	a := newHostAttempt(t, c, work)
	name := uniqueName(t)
	var targets []string
	for _, d := range []string{shared, "/tmp", "/var/tmp", "/dev/shm", "/run/lock"} {
		if fi, err := os.Stat(d); err == nil && fi.Mode().Perm()&0o002 != 0 {
			targets = append(targets, filepath.Join(d, name), filepath.Join(d, name+".d"))
		}
	}
	var script strings.Builder
	for i := 0; i < len(targets); i += 2 {
		script.WriteString("echo x > " + targets[i] + "; mkdir -p " + targets[i+1] + "/sub && echo y > " + targets[i+1] + "/sub/f\n")
	}
	a.run(script.String() + "true")
	if ro, _ := c.Record().Feature(FeatureReadOnlyHost); ro.State != events.ContainmentActive {
		// Nothing stopped the writes: what follows proves the sweep.
		if _, err := os.Lstat(targets[0]); err != nil {
			t.Fatalf("the command could not write %s: %v", targets[0], err)
		}
	}
	if err := a.sb.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, p := range targets {
		if existsOnHost(t, p) {
			t.Errorf("%s is left after the attempt", p)
		}
	}
	recordActive(t, c, FeatureLeftovers)
}

// A work dir on a mount of its own below /tmp (a disk or a tmpfs mounted
// there, as an operator gives the fleet a scratch disk) is held through the
// private /tmp that covers its mount: the probe admits it and an attempt's
// commands run in it as in any other work dir. The covered mount itself is
// out of the attempt's reach, not a mount to make read-only.
func TestAWorkDirOnItsOwnMountBelowTmpIsHeld(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skipf("mounting a file system below /tmp needs root; the test runs as uid %d", os.Geteuid())
	}
	work, err := os.MkdirTemp("/tmp", "factline-own-mount-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(work) })
	if err := syscall.Mount("tmpfs", work, "tmpfs", 0, "mode=0711,size=64m"); err != nil {
		t.Fatalf("mount a tmpfs on %s: %v", work, err)
	}
	t.Cleanup(func() { _ = syscall.Unmount(work, syscall.MNT_DETACH) })
	c, err := Probe(context.Background(), DefaultConfig(work))
	if err != nil {
		t.Fatalf("probe of a work dir on its own mount below /tmp: %v", err)
	}
	recordActive(t, c, FeaturePrivateTmp)
	a := newHostAttempt(t, c, work)
	if res := a.run("echo kept > made && echo private > /tmp/x && cat /tmp/x"); failed(res) || res.Output != "private\n" {
		t.Fatalf("a command in the work dir: %+v", res)
	}
	if data, err := os.ReadFile(filepath.Join(a.ws, "made")); err != nil || string(data) != "kept\n" {
		t.Fatalf("the workspace holds %q (%v), want what the command wrote", data, err)
	}
}
