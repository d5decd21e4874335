package step

import (
	"testing"

	"github.com/factline/factline/events"
)

// The waits every committed reply recorded add up; turns that did not wait
// add nothing.
func TestQueueWaitSumsTheRecordedWaits(t *testing.T) {
	facts := factsOf(t,
		events.TurnStarted{Turn: 1, ContextDigest: events.DigestOf([]byte("1"))},
		events.ModelReplied{Turn: 1, Provider: "p", QueueWaitMs: 1500},
		events.TurnStarted{Turn: 2, ContextDigest: events.DigestOf([]byte("2"))},
		events.ModelReplied{Turn: 2, Provider: "p"},
		events.TurnStarted{Turn: 3, ContextDigest: events.DigestOf([]byte("3"))},
		events.ModelReplied{Turn: 3, Provider: "p", QueueWaitMs: 250},
	)
	if got := QueueWaitMs(facts); got != 1750 {
		t.Fatalf("queue wait %dms, want 1750", got)
	}
}
