package runner_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/factline/factline/bus"
	"github.com/factline/factline/bus/bustest"
	"github.com/factline/factline/events"
	"github.com/factline/factline/fleet/fleettest"
	"github.com/factline/factline/internal/testutil"
	"github.com/factline/factline/services/kit"
	"github.com/factline/factline/services/runner"
)

// A runner stopped mid-run (SIGTERM, a rolling restart) with every slot
// busy hands the run back with a nak that carries no delay: the other
// runner on the server, waiting for work, claims it next, with the next
// lease, after every fact of the stopped one, and drives it to its end.
// Before, the hand-back asked the server to wait min(ack wait, 5 s)
// although the stopped runner was gone well before (docs/operations.md).
func TestAStoppedRunnerHandsItsRunBackAtOnce(t *testing.T) {
	t.Parallel()
	srv := bustest.Server(t, bus.EmbeddedConfig{Durability: bus.SyncInterval})
	ba, bb := bustest.OpenWith(t, srv, bus.Config{}), bustest.OpenWith(t, srv, bus.Config{})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	go func() { _ = fleettest.Decider{Bus: bb}.Run(ctx) }()
	acks := bustest.WatchAcks(t, srv, "")

	start := func(b *bus.Bus, name string) (stop func()) {
		rctx, cancel := context.WithCancel(ctx)
		svc, err := runner.New(b, runner.WithWorkDir(t.TempDir()), kit.WithInstance(name), kit.WithWorkers(1),
			kit.WithAckWait(30*time.Second))
		must(t, err)
		done := make(chan struct{})
		go func() { _ = svc.Run(rctx); close(done) }()
		return func() { cancel(); <-done }
	}
	stopA := start(ba, "runner-a")
	// Slow turns: the run is mid-way when the runner stops.
	var script strings.Builder
	script.WriteString("turns:\n")
	for range 8 {
		script.WriteString("  - calls: [{name: write_file, args: {path: answer.txt, content: \"5\\n\"}}]\n    delay: 500ms\n    usage: {input_tokens: 100, output_tokens: 10, cost: 1}\n")
	}
	script.WriteString(`  - calls:
      - {id: w, name: write_file, args: {path: answer.txt, content: "4\n"}}
      - {id: c, name: run_command, args: {command: ./check.sh}}
      - {id: done, name: task_complete, args: {status: done, evidence: [t9/c]}}
    usage: {input_tokens: 100, output_tokens: 10, cost: 1}
`)
	p, err := fleettest.Publish(ctx, ba, fixtureCase(t, "{steps: 40}"), treatment(t, script.String()))
	must(t, err)
	must(t, fleettest.Request(ctx, ba, "suite", "handback", p, 1))
	claims := func() []events.RunClaimed {
		log, err := ba.LoadRun(ctx, "suite", "handback")
		if err != nil {
			return nil
		}
		var out []events.RunClaimed
		for _, r := range log.Records {
			if c, ok := r.Fact.Body.(events.RunClaimed); ok {
				out = append(out, c)
			}
		}
		return out
	}
	testutil.Within(t, time.Minute, "runner a to claim the run", func() bool { return len(claims()) == 1 })
	stopB := start(bb, "runner-b")
	defer stopB()
	bustest.Pulling(t, ctx, bb, runner.ConsumerName, 1) // runner b waits for work

	stopA()
	before, err := ba.LoadRun(ctx, "suite", "handback")
	must(t, err)
	if before.Ended() {
		t.Fatal("the run ended before runner a was stopped: make its turns slower")
	}
	nak := acks.Naks(t, 1, 30*time.Second)[0]
	if nak != "-NAK" {
		t.Errorf("the stopped runner handed its run back with %q, want a nak with no delay", nak)
	}

	log, end, err := fleettest.WaitEnded(ctx, bb, "suite", "handback")
	must(t, err)
	if end.Status != events.RunDone {
		t.Errorf("the run taken over ended %s (%s), want done", end.Status, end.Reason)
	}
	var got []events.RunClaimed
	claimAt := 0
	for i, r := range log.Records {
		if r.Fact.Position != uint64(i+1) {
			t.Fatalf("positions not contiguous at %d", i)
		}
		if c, ok := r.Fact.Body.(events.RunClaimed); ok {
			got = append(got, c)
			claimAt = i
		}
	}
	if len(got) != 2 || got[0].Runner != "runner-a" || got[1].Runner != "runner-b" || got[1].Lease != got[0].Lease+1 {
		t.Fatalf("claims %+v, want runner-a's then runner-b's with the next lease", got)
	}
	// For the record, not a pass condition: how long the run went without
	// a runner (5 s and more before).
	t.Logf("runner b claimed the run %v after runner a's last fact", log.Records[claimAt].Fact.At.Sub(before.Records[len(before.Records)-1].Fact.At))
	if claimAt != len(before.Records) {
		t.Errorf("runner b claimed at position %d, want right after runner a's last fact (%d)", claimAt+1, len(before.Records))
	}
	for _, r := range log.Records[claimAt:] {
		if r.Fact.Producer.Instance == "runner-a" {
			t.Errorf("runner a committed %s at %d after runner b's claim", r.Fact.Kind(), r.Fact.Position)
		}
	}
}
