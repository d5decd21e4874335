package runner_test

import (
	"testing"
	"time"

	"github.com/factline/factline/bus"
	"github.com/factline/factline/events"
	"github.com/factline/factline/services/kit"
)

// An attempt that loses its lease to another claim leaves the delivery of
// run.requested alone: the server settles a message on an ack from any of
// its deliveries, so an ack here would settle the claimant's, and if the
// claimant then died nothing would bring the run back. Here the claimant
// never works at all (as if it died at once): the run must still be
// delivered again, taken over and ended.
func TestLosingTheLeaseLeavesTheMessageToTheClaimant(t *testing.T) {
	t.Parallel()
	e := startTuned(t, func(*bus.Bus) []kit.Option { return []kit.Option{kit.WithAckWait(2 * time.Second)} }, nil)
	b, ctx := e.b, e.ctx
	e.start(fixtureCase(t, "{steps: 6}"), `turns:
  - calls:
      - {id: w, name: write_file, args: {path: answer.txt, content: "4\n"}}
    delay: 1s
  - text: done
`, "usurped")
	e.waitFact("usurped", func(f events.Fact) bool { return f.Kind() == events.KindTurnStarted })
	// Another runner claims the run while the first waits for its model,
	// and then does nothing.
	_, err := b.Commit(ctx, nil, "suite", "usurped", func(log bus.RunLog) ([]bus.Pending, error) {
		f, err := events.NewFact(events.Meta{Suite: "suite", Run: "usurped", TaskGeneration: 1, Position: log.NextPosition(),
			Producer: events.Producer{Service: events.OwnerRunner, Instance: "usurper"}}, events.RunClaimed{Runner: "usurper", Lease: 2})
		return []bus.Pending{{Fact: f}}, err
	})
	must(t, err)
	log, end := e.wait("usurped")
	var leases []uint32
	for _, f := range log.Facts() {
		if c, ok := f.Body.(events.RunClaimed); ok {
			leases = append(leases, c.Lease)
		}
	}
	if len(leases) != 3 || leases[2] != 3 {
		t.Fatalf("claims %v, want the first attempt's, the usurper's and a takeover's (lease 3)", leases)
	}
	if end.Status != events.RunDone {
		t.Fatalf("the run ended %s (%s), want done", end.Status, end.Reason)
	}
}
