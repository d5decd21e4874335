//go:build linux

package bus_test

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/factline/factline/bus"
	"github.com/factline/factline/bus/bustest"
)

// A disk another program fills leaves slack in the last page of every
// file the store already holds, and a write small enough to fit there is
// still taken. The write probe is what tells a full disk from an idle
// suite, so it must not fit: the first probe after the disk filled is
// refused or left unanswered, not acknowledged (before, a 5-byte probe
// was acknowledged for ~45 s after the fill, ~20 probes, and `run
// --nats` stayed silent that long).
func TestTheFirstProbeAfterTheDiskFillsFails(t *testing.T) {
	// Parallel: it mostly waits (the unanswered probe's reply bound, 10 s)
	// on a tmpfs and a server of its own.
	t.Parallel()
	dir := t.TempDir()
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size=16m"); err != nil {
		if errors.Is(err, syscall.EPERM) {
			t.Skipf("mounting a tmpfs needs CAP_SYS_ADMIN, which this test process lacks: %v", err)
		}
		t.Fatalf("mount a tmpfs: %v", err)
	}
	t.Cleanup(func() { _ = syscall.Unmount(dir, syscall.MNT_DETACH) })
	srv := bustest.Server(t, bus.EmbeddedConfig{StoreDir: filepath.Join(dir, "store")})
	b := bustest.OpenWith(t, srv, bus.Config{})
	ctx := testCtx(t)
	if err := b.CheckWritable(ctx); err != nil {
		t.Fatalf("a disk with room: %v", err)
	}
	filler := filepath.Join(dir, "filler")
	f, err := os.Create(filler)
	if err != nil {
		t.Fatal(err)
	}
	// Freed before the server shuts down (cleanups run last first), so
	// that its last flush has room.
	t.Cleanup(func() { _ = os.Remove(filler) })
	chunk := make([]byte, 1<<20)
	for {
		if _, err := f.Write(chunk); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatalf("fill: %v", err)
			}
			break
		}
	}
	_ = f.Close()
	err = b.CheckWritable(ctx)
	if !errors.Is(err, bus.ErrNotStoring) && !errors.Is(err, bus.ErrStoreFull) {
		t.Fatalf("the first probe after the disk filled: %v, want ErrNotStoring or ErrStoreFull", err)
	}
}
