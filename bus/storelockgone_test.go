package bus_test

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/factline/factline/bus"
	"github.com/factline/factline/internal/testutil"
)

// lockFileUndos are the ways a store's lock file is undone behind its
// holder's back: removed, or replaced by a new file of the same name.
var lockFileUndos = []struct {
	name string
	undo func(t *testing.T, lock string)
}{
	{"removed", func(t *testing.T, lock string) {
		if err := os.Remove(lock); err != nil {
			t.Fatal(err)
		}
	}},
	{"replaced", func(t *testing.T, lock string) {
		if err := os.WriteFile(lock+".new", []byte("pid 1\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(lock+".new", lock); err != nil {
			t.Fatal(err)
		}
	}},
}

// The store's lock file removed or replaced while its holder runs (a
// cleanup script, `rm DIR/*.lock`, an rsync of the directory) leaves the
// holder holding a lock on a file no path names. The next process to
// open the store must still find it held and attach to the holder's
// server: a second embedded server on the directory would corrupt it.
func TestAStoreWhoseLockFileWasRemovedOrReplacedStaysHeld(t *testing.T) {
	for _, tc := range lockFileUndos {
		t.Run(tc.name, func(t *testing.T) {
			ctx, dir, holder := heldStore(t)
			tc.undo(t, filepath.Join(dir, bus.StoreLockFile))
			other, err := bus.OpenEmbedded(ctx, dir, bus.StoreOptions{})
			if err != nil {
				t.Fatalf("open the store again: %v", err)
			}
			defer other.Close()
			if other.Holds() {
				t.Fatal("a second open holds the store, with its holder alive: two servers run on one directory")
			}
			if err := other.Bus().Health(); err != nil {
				t.Errorf("the attached bus: %v", err)
			}
			// It names the holder it attached to: this process.
			if want := "process " + strconv.Itoa(os.Getpid()); !strings.Contains(other.Describe(), want) {
				t.Errorf("the attached open says %q, not that %s holds the store", other.Describe(), want)
			}
			if !holder.Holds() {
				t.Error("the holder no longer holds the store")
			}
		})
	}
}

// A backup that holds the store with flock(1) on factline.lock, as
// docs/operations.md says to, must wait for a holder whose lock file was
// removed or replaced: the holder locks the file at the path again.
func TestAHolderLocksItsLockFileAgainWhenItIsRemovedOrReplaced(t *testing.T) {
	// Parallel: it waits for the holder's periodic check, on stores of its
	// own.
	t.Parallel()
	for _, tc := range lockFileUndos {
		t.Run(tc.name, func(t *testing.T) {
			_, dir, _ := heldStore(t)
			lock := filepath.Join(dir, bus.StoreLockFile)
			tc.undo(t, lock)
			// Until then a backup's flock(1) would run beside the holder's
			// server.
			testutil.Within(t, 10*time.Second, "the holder to lock the file at the path again", func() bool {
				return testutil.FileLocked(lock)
			})
			// The holder writes its note just after it takes the lock:
			// the file names it soon after, not at the instant it is
			// locked.
			want := "pid " + strconv.Itoa(os.Getpid())
			testutil.Within(t, 10*time.Second, "the lock file to name its holder again", func() bool {
				note, _ := os.ReadFile(lock)
				return strings.Contains(string(note), want)
			})
		})
	}
}
