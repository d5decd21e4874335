package bus_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/factline/factline/bus"
)

// The holder's record (nats-url) removed or overwritten while it runs (a
// cleanup of "stale" files, a hand edit) left every other process unable
// to reach the store until the holder ended: a new open waited its attach
// wait and gave up, and an attached process whose connection dropped
// found no server to reconnect to. The holder keeps its record: it
// writes it again, and the open attaches.
func TestAHolderWritesItsRecordAgainWhenItIsRemovedOrChanged(t *testing.T) {
	// Parallel: it waits for the holder's periodic check, on a store of
	// its own.
	t.Parallel()
	for _, tc := range []struct {
		name string
		undo func(t *testing.T, record string)
	}{
		{"removed", func(t *testing.T, record string) {
			if err := os.Remove(record); err != nil {
				t.Fatal(err)
			}
		}},
		{"changed", func(t *testing.T, record string) {
			// Another port, and no pid: half a hand edit.
			if err := os.WriteFile(record, []byte("nats://127.0.0.1:1\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, dir, holder := heldStore(t)
			record := filepath.Join(dir, bus.StoreRecordFile)
			want, err := os.ReadFile(record)
			if err != nil {
				t.Fatal(err)
			}
			tc.undo(t, record)
			other, err := bus.OpenEmbedded(ctx, dir, bus.StoreOptions{AttachWait: 10 * time.Second})
			if err != nil {
				t.Fatalf("open the store whose holder's record is gone: %v", err)
			}
			defer other.Close()
			if other.Holds() {
				t.Fatal("a second open holds the store, with its holder alive")
			}
			if err := other.Bus().Health(); err != nil {
				t.Errorf("the attached bus: %v", err)
			}
			if got, _ := os.ReadFile(record); string(got) != string(want) {
				t.Errorf("the record is %q, want the holder's %q", got, want)
			}
			if !holder.Holds() {
				t.Error("the holder no longer holds the store")
			}
		})
	}
}
