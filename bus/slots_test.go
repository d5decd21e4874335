package bus_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/factline/factline/bus"
	"github.com/factline/factline/bus/bustest"
)

// slotHolderEnv makes the test binary a process that takes one slot and
// holds it until it is killed (see TestMain).
const slotHolderEnv = "FACTLINE_TEST_SLOT_HOLDER"

func TestMain(m *testing.M) {
	if url := os.Getenv(slotHolderEnv); url != "" {
		os.Exit(holdSlot(url))
	}
	os.Exit(m.Run())
}

// holdSlot takes slot 0 of limit "killed" with a 2s lease, renews it and
// says so on stdout, and never lets go.
func holdSlot(url string) int {
	ctx := context.Background()
	b, err := bus.Dial(ctx, url, bus.Config{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 3
	}
	slot, ok, err := b.Limits().TakeSlot(ctx, "killed", 1, "doomed", 2*time.Second)
	if err != nil || !ok {
		fmt.Fprintln(os.Stderr, "take:", ok, err)
		return 3
	}
	if err := slot.Renew(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "renew:", err)
		return 3
	}
	fmt.Println("held")
	for {
		time.Sleep(500 * time.Millisecond)
		_ = slot.Renew(ctx)
	}
}

// n holders share n slots; the next is refused until one releases.
func TestSlotsAdmitNAndARelease(t *testing.T) {
	ctx := testCtx(t)
	b, _ := bustest.Start(t)
	l := b.Limits()
	var held []*bus.Slot
	for i := range 3 {
		s, ok, err := l.TakeSlot(ctx, "k", 3, fmt.Sprint("h", i), time.Minute)
		if err != nil || !ok {
			t.Fatalf("take %d: %v %v", i, ok, err)
		}
		held = append(held, s)
	}
	if _, ok, err := l.TakeSlot(ctx, "k", 3, "h3", time.Minute); err != nil || ok {
		t.Fatalf("a fourth holder of 3 slots: ok %v err %v, want refused", ok, err)
	}
	if err := held[1].Release(ctx); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := l.TakeSlot(ctx, "k", 3, "h3", time.Minute); err != nil || !ok {
		t.Fatalf("after a release: ok %v err %v, want a slot", ok, err)
	}
	// A lowered limit admits only below it, whatever is free above.
	if _, ok, err := l.TakeSlot(ctx, "other", 1, "a", time.Minute); err != nil || !ok {
		t.Fatal(ok, err)
	}
	if _, ok, _ := l.TakeSlot(ctx, "other", 1, "b", time.Minute); ok {
		t.Fatal("a limit of 1 admitted a second holder")
	}
}

// n tokens per minute: the n+1th is refused.
func TestTokensAdmitNPerWindow(t *testing.T) {
	ctx := testCtx(t)
	b, _ := bustest.Start(t)
	l := b.Limits()
	for i := range 5 {
		if ok, err := l.TakeToken(ctx, "k", 5, "h"); err != nil || !ok {
			t.Fatalf("token %d: %v %v", i, ok, err)
		}
	}
	if ok, err := l.TakeToken(ctx, "k", 5, "h"); err != nil || ok {
		t.Fatalf("a sixth token of 5 a minute: ok %v err %v, want refused", ok, err)
	}
}

// The adaptive state is compare-and-set: a writer with a stale revision
// loses.
func TestLimitStateIsCompareAndSet(t *testing.T) {
	ctx := testCtx(t)
	b, _ := bustest.Start(t)
	l := b.Limits()
	if data, rev, err := l.LoadState(ctx, "k"); err != nil || data != nil || rev != 0 {
		t.Fatalf("no state yet: %q %d %v", data, rev, err)
	}
	if ok, err := l.SaveState(ctx, "k", []byte(`{"limit":1}`), 0); err != nil || !ok {
		t.Fatal(ok, err)
	}
	if ok, err := l.SaveState(ctx, "k", []byte(`{"limit":2}`), 0); err != nil || ok {
		t.Fatalf("a second create: ok %v err %v, want a lost race", ok, err)
	}
	data, rev, err := l.LoadState(ctx, "k")
	if err != nil || string(data) != `{"limit":1}` {
		t.Fatal(string(data), err)
	}
	if ok, err := l.SaveState(ctx, "k", []byte(`{"limit":3}`), rev); err != nil || !ok {
		t.Fatal(ok, err)
	}
	if ok, _ := l.SaveState(ctx, "k", []byte(`{"limit":4}`), rev); ok {
		t.Fatal("a stale revision won")
	}
}

// A process SIGKILLed while it holds the only slot frees it when its lease
// runs out: the server expires the key (its marker is the event this test
// waits for, not a clock), and a waiter then takes that slot.
func TestAKilledHoldersSlotIsFreedByItsLease(t *testing.T) {
	// Parallel: it waits for a lease to expire on a server of its own.
	t.Parallel()
	ctx := testCtx(t)
	b, srv := bustest.StartWith(t, bus.EmbeddedConfig{Listen: "127.0.0.1:-1"})
	l := b.Limits()
	kv, err := b.JetStream().KeyValue(ctx, bus.LimitsBucket)
	if err != nil {
		t.Fatal(err)
	}
	w, err := kv.Watch(ctx, "killed.c.0", jetstream.UpdatesOnly())
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = w.Stop() }()

	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "-test.run=^$")
	cmd.Env = append(os.Environ(), slotHolderEnv+"="+srv.ClientURL())
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || line != "held\n" {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		t.Fatalf("the holder never held its slot: %q %v\n%s", line, err, stderr.String())
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()

	// Updates from the take on: the holder's renewals, then the server's
	// expiry marker (a purge made by the server: nobody released it).
	for expired := false; !expired; {
		select {
		case e := <-w.Updates():
			if e == nil {
				continue
			}
			switch e.Operation() {
			case jetstream.KeyValuePut:
				if string(e.Value()) != "doomed" {
					t.Fatalf("slot 0 taken by %q before the holder's lease ran out", e.Value())
				}
			case jetstream.KeyValuePurge:
				expired = true
			default:
				t.Fatalf("slot 0 %s, want its expiry", e.Operation())
			}
		case <-ctx.Done():
			t.Fatal("the killed holder's slot never expired")
		}
	}
	if _, ok, err := l.TakeSlot(ctx, "killed", 1, "survivor", 2*time.Second); err != nil || !ok {
		t.Fatalf("after the lease ran out: ok %v err %v, want the slot", ok, err)
	}
}
