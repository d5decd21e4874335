package bus

import (
	"sync/atomic"
	"time"
)

// Faults injects delivery faults into every consumer of a Bus, for fault
// drills and the tests that prove handlers are idempotent and slow
// consumers cause no duplicates. The zero value injects none.
type Faults struct {
	// Redeliver handles the first delivery of every message and then naks
	// it instead of acknowledging it, so every handler sees every message
	// at least twice: once done, once again with its effects already in
	// the log.
	Redeliver bool
	// PauseOnce, when positive, stalls the first delivery this Bus handles
	// for that long before its handler runs, sending no progress
	// heartbeats: set it longer than the consumer's ack wait and the
	// server hands the message to another instance meanwhile, after which
	// both handle it.
	PauseOnce time.Duration
}

// faultState is what a Bus remembers of the faults it has injected.
type faultState struct {
	paused atomic.Bool
}

// pauseOnce reports how long this delivery must stall (zero for all but
// the first delivery the Bus handles).
func (b *Bus) pauseOnce() time.Duration {
	if b.cfg.Faults.PauseOnce <= 0 || !b.faults.paused.CompareAndSwap(false, true) {
		return 0
	}
	return b.cfg.Faults.PauseOnce
}

// redeliverFirst reports whether a handled delivery must be nak'd instead
// of acknowledged.
func (b *Bus) redeliverFirst(deliveries uint64) bool {
	return b.cfg.Faults.Redeliver && deliveries == 1
}
