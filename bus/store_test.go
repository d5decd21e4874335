package bus_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/factline/factline/bus"
)

// One process holds a store; a second open in another process's place
// attaches to the holder's server instead of starting a second one on the
// directory, and an open that cannot share the store is refused with the
// holder and the conflict named.
func TestASecondOpenOfAStoreAttachesToItsHolder(t *testing.T) {
	ctx, dir, holder := heldStore(t)
	if !holder.Holds() {
		t.Fatal("the first open of a free store does not hold it")
	}
	if _, _, _, _, ok := holder.Served(); !ok {
		t.Error("the holder says it serves nothing")
	}
	other, err := bus.OpenEmbedded(ctx, dir, bus.StoreOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if other.Holds() {
		t.Fatal("a second open of a held store holds it too")
	}
	if err := other.Bus().Health(); err != nil {
		t.Errorf("the attached bus: %v", err)
	}

	_, err = bus.OpenEmbedded(ctx, dir, bus.StoreOptions{Durability: bus.SyncInterval, RequireDurability: true})
	var held *bus.StoreHeldError
	if !errors.As(err, &held) || held.Conflict != bus.ConflictDurability || held.Durability != bus.SyncAlways || held.Holder == "" {
		t.Errorf("an open requiring fsync interval of a store served with always: %v", err)
	}
	_, err = bus.OpenEmbedded(ctx, dir, bus.StoreOptions{Listen: &bus.StoreListen{Addr: "127.0.0.1:-1"}})
	if !errors.As(err, &held) || held.Conflict != bus.ConflictListen || held.URL == "" {
		t.Errorf("an open to serve a store another process serves: %v", err)
	}
}

// A lock held a moment longer than its holder needs it (a process still
// starting, or a child forked just before the holder closed the lock,
// which keeps the lock until it execs) is not yet a server to refuse: an
// open that is to serve the store waits for it as an attaching open does,
// and is refused only once a holder serves the store or the wait is over.
func TestAnOpenToServeWaitsForALockHeldWithoutAServer(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	dir := t.TempDir()
	lock := holdLock(t, dir)
	go func() {
		time.Sleep(300 * time.Millisecond)
		lock.Close()
	}()
	s, err := bus.OpenEmbedded(ctx, dir, bus.StoreOptions{Listen: &bus.StoreListen{Addr: "127.0.0.1:-1"}, AttachWait: 20 * time.Second})
	if err != nil {
		t.Fatalf("an open to serve a store whose lock is freed a moment later: %v", err)
	}
	defer s.Close()
	if !s.Holds() {
		t.Fatal("the open does not hold the store")
	}

	// A lock that stays held without a server is refused when the wait ends.
	other := t.TempDir()
	defer holdLock(t, other).Close()
	_, err = bus.OpenEmbedded(ctx, other, bus.StoreOptions{Listen: &bus.StoreListen{Addr: "127.0.0.1:-1"}, AttachWait: 300 * time.Millisecond})
	var held *bus.StoreHeldError
	if !errors.As(err, &held) || held.Conflict != bus.ConflictListen || held.URL != "" {
		t.Errorf("an open to serve a store held by a process that never serves it: %v", err)
	}
}

// heldStore opens a fresh store, which this process holds until the test
// ends, and returns the context for the opens that follow, the store's
// directory and its holder.
func heldStore(t *testing.T) (context.Context, string, *bus.Store) {
	t.Helper()
	ctx := testCtx(t)
	dir := t.TempDir()
	holder, err := bus.OpenEmbedded(ctx, dir, bus.StoreOptions{})
	if err != nil {
		t.Fatalf("open a fresh store: %v", err)
	}
	t.Cleanup(holder.Close)
	return ctx, dir, holder
}

// holdLock takes a store's lock as another process would (flock(1)).
func holdLock(t *testing.T, dir string) *os.File {
	t.Helper()
	f, err := os.OpenFile(filepath.Join(dir, bus.StoreLockFile), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		t.Fatal(err)
	}
	return f
}
