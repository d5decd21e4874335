package runner_test

import (
	"context"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/factline/factline/bus"
	"github.com/factline/factline/bus/bustest"
	"github.com/factline/factline/cases"
	"github.com/factline/factline/events"
	"github.com/factline/factline/fleet/fleettest"
	"github.com/factline/factline/models/limit"
	"github.com/factline/factline/services/kit"
	"github.com/factline/factline/services/runner"
)

// slotWallBudget is the wall budget of the runs below; the test holds the
// model's only slot for longer than that. What is charged must fit in it
// under a loaded -race run: after a takeover that is the child's start,
// the ack wait (2 s) before the heir's claim and the heir's turn, so 4 s
// left too little (it ended wall_time_limit once at load 20).
const (
	slotWallBudget = "{steps: 6, wall: 6s}"
	slotHeld       = 6500 * time.Millisecond
)

// limitedTreatment is a scripted treatment whose model has one slot in
// the whole fleet.
func limitedTreatment(t *testing.T, script string) *cases.Treatment {
	t.Helper()
	tr, err := cases.ParseTreatment("t.yaml", []byte("id: limited\nmodel: {provider: scripted, scripts: x, limits: {max_concurrent: 1}}\n"))
	must(t, err)
	tr.Model.ScriptFiles = map[string]string{"fix": script}
	return tr
}

// holdSlotThroughTurn takes the model's only slot, waits for the run's
// first turn to start (its call then waits for the slot), keeps the slot
// for longer than the run's wall budget and gives it back.
func holdSlotThroughTurn(t *testing.T, ctx context.Context, b *bus.Bus, run string) {
	t.Helper()
	slot, ok, err := b.Limits().TakeSlot(ctx, limit.Key(cases.ProviderScripted, "", ""), 1, "test", time.Minute)
	if err != nil || !ok {
		t.Fatalf("take the slot: %v %v", ok, err)
	}
	wake, stop, err := b.WakeOn("suite", run, events.KindTurnStarted)
	must(t, err)
	defer stop()
	for started := false; !started; {
		log, err := b.LoadRun(ctx, "suite", run)
		must(t, err)
		started = len(kinds(log, events.KindTurnStarted)) > 0
		if !started {
			select {
			case <-wake:
			case <-time.After(200 * time.Millisecond):
			case <-ctx.Done():
				t.Fatal("the run never started a turn")
			}
		}
	}
	time.Sleep(slotHeld)
	must(t, slot.Release(ctx))
}

// checkWaitExcluded: the run started its second turn and finished done
// although its first call waited longer than its whole wall budget, and
// the first reply recorded the wait.
func checkWaitExcluded(t *testing.T, log bus.RunLog, end events.RunEnded) {
	t.Helper()
	if end.Status != events.RunDone {
		t.Fatalf("run ended %s (%s), want done: the wait for a model slot was charged to its wall budget", end.Status, end.Reason)
	}
	replies := kinds(log, events.KindModelReplied)
	if len(replies) != 2 {
		t.Fatalf("%d replies, want 2: the second turn started after the wait", len(replies))
	}
	if w := replies[0].Body.(events.ModelReplied).QueueWaitMs; w < uint64(slotHeld.Milliseconds()) {
		t.Fatalf("the reply recorded a wait of %dms, want at least the %s the slot was held", w, slotHeld)
	}
}

// A run whose model call waits for a fleet-wide slot longer than its whole
// wall budget still finishes: the wait is not charged.
func TestAModelSlotWaitIsNotChargedToTheWallBudget(t *testing.T) {
	// Serial: its wall budget is seconds, which tests running beside it
	// on a loaded -race run could use up before the step it is about.
	e := start(t)
	p, err := fleettest.Publish(e.ctx, e.b, fixtureCase(t, slotWallBudget), limitedTreatment(t, twoTurnScript))
	must(t, err)
	must(t, fleettest.Request(e.ctx, e.b, "suite", "waits", p, 1))
	holdSlotThroughTurn(t, e.ctx, e.b, "waits")
	log, end, err := fleettest.WaitEnded(e.ctx, e.b, "suite", "waits")
	must(t, err)
	checkWaitExcluded(t, log, end)
}

// The same after a takeover: the runner that waited dies (SIGKILL) right
// after it committed the reply; the heir, whose wall clock runs from the
// first claim, does not charge the wait the reply recorded and finishes.
func TestAModelSlotWaitIsNotChargedAfterATakeover(t *testing.T) {
	// Serial: its wall budget is seconds, which tests running beside it
	// on a loaded -race run could use up before the step it is about.
	b, srv := bustest.StartWith(t, bus.EmbeddedConfig{Listen: "127.0.0.1:-1"})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	go func() { _ = fleettest.Decider{Bus: b}.Run(ctx) }()
	p, err := fleettest.Publish(ctx, b, fixtureCase(t, slotWallBudget), limitedTreatment(t, twoTurnScript))
	must(t, err)
	// The child commits run.claimed, turn.started, model.replied and dies.
	child := exec.Command(os.Args[0])
	child.Env = append(os.Environ(), "FACTLINE_TEST_RUNNER="+srv.ClientURL(),
		"FACTLINE_TEST_CRASH_AT="+strconv.Itoa(3), "FACTLINE_TEST_WORKDIR="+t.TempDir())
	must(t, child.Start())
	must(t, fleettest.Request(ctx, b, "suite", "heir-waits", p, 1))
	holdSlotThroughTurn(t, ctx, b, "heir-waits")
	err = child.Wait()
	if ws, ok := child.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("the child runner did not die by SIGKILL: %v", err)
	}
	rctx, stop := context.WithCancel(ctx)
	svc, err := runner.New(b, runner.WithWorkDir(t.TempDir()), kit.WithAckWait(runner.MinAckWait), kit.WithInstance("heir"))
	must(t, err)
	done := make(chan struct{})
	go func() { _ = svc.Run(rctx); close(done) }()
	defer func() { stop(); <-done }()
	log, end, err := fleettest.WaitEnded(ctx, b, "suite", "heir-waits")
	must(t, err)
	checkWaitExcluded(t, log, end)
	claims := kinds(log, events.KindRunClaimed)
	if len(claims) != 2 || claims[1].Producer.Instance != "heir" {
		t.Fatalf("claims %v, want the dead runner's and the heir's", claims)
	}
}
