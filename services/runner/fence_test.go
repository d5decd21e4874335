package runner_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/factline/factline/bus"
	"github.com/factline/factline/bus/bustest"
	"github.com/factline/factline/cases"
	"github.com/factline/factline/events"
	"github.com/factline/factline/fleet/fleettest"
	"github.com/factline/factline/services/kit"
	"github.com/factline/factline/services/runner"
)

// Runner A's connection freezes right after it published a call's
// dispatch.intended, before the server's acknowledgement reaches it: its
// in-progress acks stop reaching the server, the ack wait passes and
// runner B takes the run over, looks the operation up (not found: A never
// sent it) and sends it. Then A's connection comes back and the late
// acknowledgement lets A go on with the call it intended. A must not send
// it: its hold on the run lapsed while it was frozen, and an external
// effect is sent only under a hold the server confirmed, checked against
// the run's newest claim. The sink applies the operation once.
func TestFrozenRunnerSendsNoEffectAfterTakeover(t *testing.T) {
	t.Parallel()
	b, srv := bustest.StartWith(t, bus.EmbeddedConfig{Durability: bus.SyncInterval, Listen: "127.0.0.1:-1"})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	fz := bustest.StartFreezer(t, srv.ClientURL())
	busA, err := bus.Dial(ctx, fz.URL(), bus.Config{})
	must(t, err)
	t.Cleanup(busA.Conn().Close)

	sk := &sink{effects: map[string]int{}}
	var thaw sync.Once
	sk.onPost = func() { thaw.Do(fz.Thaw) } // B's send: A's connection comes back
	hs := httptest.NewServer(sk)
	defer hs.Close()
	kase := fixtureCase(t, "{steps: 6}")
	kase.HTTP = &cases.HTTPPolicy{Allow: []string{hs.URL + "/"}, Status: hs.URL + "/status/{operation}",
		Timeout: cases.Duration(300 * time.Millisecond), Settle: cases.Duration(200 * time.Millisecond)}
	kase.Tools = append(kase.Tools, "http_call")
	script := fmt.Sprintf(`turns:
  - calls:
      - {id: pay, name: http_call, args: {url: "%s/pay", body: '{"amount": 5}'}}
      - {id: done, name: task_complete, args: {status: done, evidence: [t1/pay]}}
`, hs.URL)
	const ackWait = 2 * time.Second
	newRunner := func(bb *bus.Bus, name string) (*runner.Service, func()) {
		svc, err := runner.New(bb, runner.WithWorkDir(t.TempDir()), kit.WithAckWait(ackWait), kit.WithInstance(name),
			kit.WithWorkers(1), runner.WithApprovalTimeout(time.Second))
		must(t, err)
		rctx, stop := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() { _ = svc.Run(rctx); close(done) }()
		return svc, func() { stop(); <-done }
	}
	go func() { _ = fleettest.Decider{Bus: b}.Run(ctx) }()

	fz.FreezeAfter("dispatch.intended")
	_, stopA := newRunner(busA, "A")
	defer stopA()
	p, err := fleettest.Publish(ctx, b, kase, treatment(t, script))
	must(t, err)
	must(t, fleettest.Request(ctx, b, "suite", "frozen", p, 1))
	select {
	case <-fz.Frozen():
	case <-ctx.Done():
		t.Fatal("runner A never published its dispatch.intended")
	}
	_, stopB := newRunner(b, "B")
	defer stopB()

	log, end, err := fleettest.WaitEnded(ctx, b, "suite", "frozen")
	must(t, err)
	// A has had its chance: once it stops, whatever it was going to send
	// has been sent.
	stopA()
	if end.Status != events.RunDone {
		t.Fatalf("the run ended %s (%s), want done", end.Status, end.Reason)
	}
	var claimants []string
	for _, f := range log.Facts() {
		if c, ok := f.Body.(events.RunClaimed); ok {
			claimants = append(claimants, c.Runner)
		}
	}
	if len(claimants) < 2 || claimants[0] != "A" || claimants[len(claimants)-1] != "B" {
		t.Fatalf("claims by %v, want A's and then B's takeover", claimants)
	}
	if n := sk.total(); n != 1 {
		for _, f := range log.Facts() {
			t.Logf("%d %s %s %+v", f.Position, f.Kind(), f.Producer.Instance, f.Body)
		}
		t.Fatalf("the sink applied the operation %d times, want exactly once", n)
	}
}
