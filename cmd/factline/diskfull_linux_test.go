//go:build linux

package main

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/factline/factline/internal/testutil"
)

// smallDisk mounts a tmpfs of size (e.g. "24m") for the test: a disk that
// can really fill. Mounting needs CAP_SYS_ADMIN; a host whose test
// process lacks it cannot run the test, and says so.
func smallDisk(t *testing.T, size string) string {
	t.Helper()
	dir := t.TempDir()
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size="+size); err != nil {
		if errors.Is(err, syscall.EPERM) {
			t.Skipf("mounting a tmpfs needs CAP_SYS_ADMIN, which this test process lacks: %v", err)
		}
		t.Fatalf("mount a %s tmpfs: %v", size, err)
	}
	// Registered after TempDir's removal, so it runs first.
	t.Cleanup(func() { _ = syscall.Unmount(dir, syscall.MNT_DETACH) })
	return dir
}

// fill writes a file into dir until its disk has no space left.
func fill(t *testing.T, dir string) string {
	t.Helper()
	path := filepath.Join(dir, "filler")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	chunk := make([]byte, 1<<20)
	for {
		if _, err := f.Write(chunk); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatalf("fill %s: %v", dir, err)
			}
			return path
		}
	}
}

// runUntilTheDiskFills starts 'factline run' of a 200-run suite with args,
// fills disk once 5 runs have ended, and returns its exit status and
// stderr, and the filler file.
func runUntilTheDiskFills(t *testing.T, disk, suite string, args ...string) (int, string, string) {
	t.Helper()
	out, errOut := &testutil.LogBuffer{}, &testutil.LogBuffer{}
	_, exited := startRun(t, out, errOut, append([]string{suite}, args...)...)
	deadline := time.After(2 * time.Minute)
	for {
		m := progressLine.FindAllStringSubmatch(out.String(), -1)
		if len(m) > 0 {
			if n, _ := strconv.Atoi(m[len(m)-1][3]); n >= 5 {
				break
			}
		}
		select {
		case code := <-exited:
			t.Fatalf("run exited %d before 5 runs ended: %s", code, errOut.String())
		case <-deadline:
			t.Fatalf("5 runs not ended after 2 minutes: %q", out.String())
		case <-time.After(20 * time.Millisecond):
		}
	}
	filler := fill(t, disk)
	select {
	case code := <-exited:
		return code, errOut.String(), filler
	case <-time.After(2 * time.Minute):
		// Bounds the test; nothing is timed (run speaks ~25 s after the
		// fill, the two probes' reply timeouts included).
		t.Fatalf("run still silent 2 minutes after the disk filled: %q", errOut.String())
	}
	return 0, "", ""
}

// A disk that another program fills before JetStream's own store limit
// is reached: the embedded server then neither refuses writes nor stops,
// it logs "no space left on device" and acknowledges nothing more, and
// 'factline run' used to wait in silence. It now says, within seconds of
// the suite stopping, that the disk holding the store is full, names the
// store, and says how to go on; and going on that way (space freed, the
// same command again) takes the suite to its report.
func TestRunSaysWhenTheDiskUnderItsStoreFills(t *testing.T) {
	t.Parallel()
	disk := smallDisk(t, "24m")
	store := filepath.Join(disk, "store")
	suite := writeTrialsSuite(t, 200)
	code, msg, filler := runUntilTheDiskFills(t, disk, suite, "--store", store, "--fsync", "interval")
	t.Logf("run said: %s", msg)
	for _, want := range []string{
		"the disk holding the store " + store + " is full",
		"no space left on device",
		"Free space on that disk (df -h " + store,
		"then run the same command again",
	} {
		if code != 1 || !strings.Contains(msg, want) {
			t.Errorf("run on a disk that filled: exit %d, stderr %q; want 1 and %q", code, msg, want)
		}
	}
	if t.Failed() {
		return
	}

	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	code, report, errText := runCLI(t, "run", suite, "--store", store, "--fsync", "interval", "--json")
	if code != 0 || !strings.Contains(report, `"complete": true`) {
		t.Fatalf("the same command again, space freed: exit %d, stderr %q", code, errText)
	}
}

// With --nats the server's disk is not this machine's to look at: a write
// probe the server leaves unacknowledged while it answers reads is what
// tells a full disk there from a server that is away, and 'run' says so
// and what to do.
func TestRunNatsSaysWhenTheServerStoresNothing(t *testing.T) {
	t.Parallel()
	disk := smallDisk(t, "24m")
	url := startNatsdIn(t, filepath.Join(disk, "store"))
	startServe(t, "--nats", url, "--instances", "2")
	code, msg, _ := runUntilTheDiskFills(t, disk, writeTrialsSuite(t, 200), "--nats", url)
	t.Logf("run said: %s", msg)
	for _, want := range []string{"JetStream answers but stores nothing", "no space left on device", "restart nats-server"} {
		if code != 1 || !strings.Contains(msg, want) {
			t.Errorf("run --nats on a server whose disk filled: exit %d, stderr %q; want 1 and %q", code, msg, want)
		}
	}
}
