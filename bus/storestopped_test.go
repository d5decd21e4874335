package bus_test

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/factline/factline/bus"
	"github.com/factline/factline/internal/testutil"
)

// A holder stopped with SIGSTOP (or held by a debugger) keeps the store's
// lock and serves nothing: an open that waits for it gives up at its
// attach wait, as for any holder that serves nothing, and says that the
// holder is stopped and how to go on, rather than blaming a backup or a
// slow start.
func TestAnOpenOfAStoreWhoseHolderIsStoppedSaysSo(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	dir := t.TempDir()
	flock, err := exec.LookPath("flock")
	if err != nil {
		t.Fatalf("flock(1) (util-linux) is needed to hold a store's lock from another process: %v", err)
	}
	holder := exec.Command(flock, filepath.Join(dir, bus.StoreLockFile), "sleep", "120")
	holder.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := holder.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = syscall.Kill(-holder.Process.Pid, syscall.SIGKILL)
		_ = syscall.Kill(-holder.Process.Pid, syscall.SIGCONT)
		_ = holder.Wait()
	})
	testutil.Within(t, 10*time.Second, "flock holds the lock", func() bool {
		return testutil.FileLocked(filepath.Join(dir, bus.StoreLockFile))
	})
	if err := syscall.Kill(holder.Process.Pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	_, err = bus.OpenEmbedded(ctx, dir, bus.StoreOptions{AttachWait: 500 * time.Millisecond})
	pid := holder.Process.Pid
	if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("process %d", pid)) || !strings.Contains(err.Error(), "is stopped") ||
		!strings.Contains(err.Error(), fmt.Sprintf("kill -CONT %d", pid)) {
		t.Fatalf("an open of a store whose holder is stopped: %v", err)
	}
}
