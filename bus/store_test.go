package bus_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/factline/factline/bus"
)

// One process holds a store; a second open in another process's place
// attaches to the holder's server instead of starting a second one on the
// directory, and an open that cannot share the store is refused with the
// holder and the conflict named.
func TestASecondOpenOfAStoreAttachesToItsHolder(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	dir := t.TempDir()
	holder, err := bus.OpenEmbedded(ctx, dir, bus.StoreOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Close()
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
