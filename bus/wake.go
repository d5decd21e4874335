package bus

import (
	"fmt"

	"github.com/nats-io/nats.go"

	"github.com/factline/factline/events"
)

// WakeOn returns a channel that is signalled whenever a fact of kind is
// published for the run, and a function that stops it. A wake is only a
// hint to look again: the message that caused it is not read (a subscriber
// may hear of a fact a moment before the stream serves it, and of facts the
// stream refuses), so the caller reads the log, which is the truth, and
// looks again on a timer as well. Wakes coalesce: one pending wake stands
// for any number of facts.
func (b *Bus) WakeOn(suite, run string, kind events.Kind) (<-chan struct{}, func(), error) {
	subj, err := events.FactSubject(suite, run, kind)
	if err != nil {
		return nil, nil, fmt.Errorf("wake on %s of %s/%s: %w", kind, suite, run, err)
	}
	wake := make(chan struct{}, 1)
	sub, err := b.nc.Subscribe(subj, func(*nats.Msg) {
		select {
		case wake <- struct{}{}:
		default:
		}
	})
	if err != nil {
		return nil, nil, fmt.Errorf("wake on %s of %s/%s: %w", kind, suite, run, err)
	}
	return wake, func() { _ = sub.Unsubscribe() }, nil
}
