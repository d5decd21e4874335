package bench

import (
	"context"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/factline/factline/bus"
	"github.com/factline/factline/events"
)

// appendRuns is how many runs B1 appends to at once.
const appendRuns = 1000

// appendResult is one repetition of B1: facts per second of each side.
type appendResult struct{ factline, raw float64 }

// benchAppend measures pipelined appends to appendRuns runs: each round
// appends one fact to every run without waiting, then collects the
// acknowledgements, as a fleet of runners does. factline goes through
// bus.AppendAsync (validation, encoding, run-wide optimistic concurrency,
// run links); the baseline publishes the same kind of encoded bytes with
// the same headers through JetStream's async publish. The two alternate
// round by round so that machine noise hits both alike.
func benchAppend(ctx context.Context, b *bus.Bus, rep, rounds int) (appendResult, error) {
	js := b.JetStream()
	flExpect := make([]bus.Expect, appendRuns)
	rawExpect := make([]bus.Expect, appendRuns)
	var fl, raw time.Duration
	suite := fmt.Sprintf("b1r%d", rep)
	for round := range rounds {
		pos := uint64(round + 1)
		// Facts are made outside the timed sections: building them is
		// the caller's cost on both sides.
		ff := make([]events.Fact, appendRuns)
		for r := range ff {
			f, err := turnCompleted(suite, fmt.Sprintf("fl%d", r), pos)
			if err != nil {
				return appendResult{}, err
			}
			ff[r] = f
		}
		t0 := time.Now()
		pend := make([]*bus.AsyncAppend, appendRuns)
		for r, f := range ff {
			a, err := b.AppendAsync(flExpect[r], bus.Pending{Fact: f})
			if err != nil {
				return appendResult{}, err
			}
			pend[r] = a
		}
		for r, a := range pend {
			rec, err := a.Wait(ctx)
			if err != nil {
				return appendResult{}, err
			}
			flExpect[r] = flExpect[r].Then(rec.Seq)
		}
		fl += time.Since(t0)

		msgs := make([]*nats.Msg, appendRuns)
		ids := make([]string, appendRuns)
		filters := make([]string, appendRuns)
		for r := range msgs {
			run := fmt.Sprintf("raw%d", r)
			f, err := turnCompleted(suite, run, pos)
			if err != nil {
				return appendResult{}, err
			}
			data, err := events.EncodeStored(f)
			if err != nil {
				return appendResult{}, err
			}
			subj, _ := f.Subject()
			m := &nats.Msg{Subject: subj, Data: data, Header: nats.Header{}}
			if h := rawExpect[r].Header(); h != "" {
				m.Header.Set(bus.HeaderPrev, h)
			}
			msgs[r], ids[r], filters[r] = m, f.ID.String(), events.RunFilter(suite, run)
		}
		t0 = time.Now()
		futs := make([]jetstream.PubAckFuture, appendRuns)
		for r, m := range msgs {
			fut, err := js.PublishMsgAsync(m,
				jetstream.WithExpectLastSequenceForSubject(rawExpect[r].Last, filters[r]),
				jetstream.WithMsgID(ids[r]))
			if err != nil {
				return appendResult{}, err
			}
			futs[r] = fut
		}
		for r, fut := range futs {
			select {
			case ack := <-fut.Ok():
				rawExpect[r] = rawExpect[r].Then(ack.Sequence)
			case err := <-fut.Err():
				return appendResult{}, err
			case <-ctx.Done():
				return appendResult{}, ctx.Err()
			}
		}
		raw += time.Since(t0)
	}
	n := float64(rounds * appendRuns)
	return appendResult{factline: n / fl.Seconds(), raw: n / raw.Seconds()}, nil
}
