package bus

import (
	"context"
	"fmt"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/factline/factline/events"
)

// StoredPrefix starts the subjects on which FACTS announces, headers only,
// each stop decision it has stored: stored.fact.<suite>.<run>.stop.decided.
// The server sends the announcement after the write, so a runner woken by
// it reads a log that holds the decision. A subscriber on the fact's own
// subject hears of it while the server still writes it (with fsync on every
// write, nearly always), and its read finds nothing.
const StoredPrefix = "stored"

// storedWakes is FACTS' republish of stop decisions. A stream has one
// republish rule; the decision is the fact a runner waits on every turn.
func storedWakes() *jetstream.RePublish {
	return &jetstream.RePublish{
		Source:      events.FactPrefix + ".*.*." + string(events.KindStopDecided),
		Destination: StoredPrefix + "." + events.FactPrefix + ".{{wildcard(1)}}.{{wildcard(2)}}." + string(events.KindStopDecided),
		HeadersOnly: true,
	}
}

// noteRePublish records whether FACTS, as it exists, announces stored
// decisions. A stream made by a factline before the announcement has no
// republish rule, and factline does not change an existing stream behind
// the operator's back: wakes then come from the fact's own subject.
func (b *Bus) noteRePublish(have, want jetstream.StreamConfig) {
	if want.Name != FactsStream {
		return
	}
	rp, w := have.RePublish, storedWakes()
	b.storedWakes.Store(rp != nil && rp.Source == w.Source && rp.Destination == w.Destination)
}

// WakeOn returns a channel that is signalled whenever a fact of kind is
// published for the run, and a function that stops it. A wake is only a
// hint to look again: the message that caused it is not read, so the caller
// reads the log, which is the truth, and looks again on a timer as well.
// A stop decision wakes once FACTS has stored it (see StoredPrefix); other
// kinds, and decisions on a FACTS made before that, wake on the fact's own
// subject, which may come a moment before the stream serves the fact, and
// for facts the stream refuses. Wakes coalesce: one pending wake stands for
// any number of facts.
func (b *Bus) WakeOn(suite, run string, kind events.Kind) (<-chan struct{}, func(), error) {
	subj, err := events.FactSubject(suite, run, kind)
	if err != nil {
		return nil, nil, fmt.Errorf("wake on %s of %s/%s: %w", kind, suite, run, err)
	}
	if kind == events.KindStopDecided && b.storedWakes.Load() {
		subj = StoredPrefix + "." + subj
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

// AnnounceStoredDecisions adds the announcement of stored stop decisions
// (StoredPrefix) to a FACTS stream made before it, as factline setup does;
// it reports whether it changed the stream. A stream whose republish rule
// is an operator's own is left alone, with an error saying so. Buses
// already open keep waking on the fact's subject until they are opened
// again.
func (b *Bus) AnnounceStoredDecisions(ctx context.Context) (bool, error) {
	want := storedWakes()
	changed, err := b.editFacts(ctx, "add the announcement of stored decisions", func(cfg *jetstream.StreamConfig) (bool, error) {
		switch rp := cfg.RePublish; {
		case rp != nil && rp.Source == want.Source && rp.Destination == want.Destination:
			return false, nil
		case rp != nil:
			return false, fmt.Errorf("stream %s republishes %s to %s (a rule of its own): factline's announcement of stored decisions, %s to %s, is not added, and runners wake on the fact's subject",
				FactsStream, rp.Source, rp.Destination, want.Source, want.Destination)
		}
		cfg.RePublish = want
		return true, nil
	})
	if err == nil {
		b.storedWakes.Store(true)
	}
	return changed, err
}
