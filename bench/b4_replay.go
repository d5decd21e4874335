package bench

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/vmihailenco/msgpack/v5"

	"github.com/factline/factline/bus"
	"github.com/factline/factline/events"
	"github.com/factline/factline/projections"
	"github.com/factline/factline/projections/replay"
)

// fillSuite names the suite of the facts B4 and B5 read.
const (
	fillSuite   = "fill"
	fillRunLen  = 50 // facts per run: B5 loads one such run
	fillWindow  = 4000
	readPrefect = 2048 // the prefetch bus.Read uses, for the baseline too
)

// fillRun names run i of the filled stream.
func fillRun(i int) string { return fmt.Sprintf("run-%06d", i) }

// fill writes n real encoded facts to FACTS with raw async publishes: n/50
// runs of 50 facts, one fact of every run per round, so that each run's
// facts lie spread through the whole stream (the worst case for loading
// one). Every message carries the run links bus.Append would write, so
// LoadRun takes its fast path.
func fill(ctx context.Context, b *bus.Bus, n int) error {
	js, err := jetstream.New(b.Conn(), jetstream.WithPublishAsyncMaxPending(fillWindow))
	if err != nil {
		return err
	}
	runs := n / fillRunLen
	expect := make([]bus.Expect, runs)
	busy := make([]bool, runs)
	type inflight struct {
		fut jetstream.PubAckFuture
		run int
	}
	window := make([]inflight, 0, fillWindow)
	settle := func(keep int) error {
		for len(window) > keep {
			w := window[0]
			window = window[1:]
			select {
			case ack := <-w.fut.Ok():
				expect[w.run] = expect[w.run].Then(ack.Sequence)
				busy[w.run] = false
			case err := <-w.fut.Err():
				return fmt.Errorf("fill: %w", err)
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		return nil
	}
	for round := range fillRunLen {
		for r := range runs {
			// A run's previous fact must be settled before its next is
			// made, so that its links are known.
			for busy[r] || len(window) >= fillWindow {
				if err := settle(len(window) - 1); err != nil {
					return err
				}
			}
			f, err := runFact(fillSuite, fillRun(r), uint64(round+1))
			if err != nil {
				return fmt.Errorf("fill: %w", err)
			}
			data, err := events.EncodeStored(f)
			if err != nil {
				return fmt.Errorf("fill: %w", err)
			}
			subj, _ := f.Subject()
			m := &nats.Msg{Subject: subj, Data: data, Header: nats.Header{}}
			if h := expect[r].Header(); h != "" {
				m.Header.Set(bus.HeaderPrev, h)
			}
			fut, err := js.PublishMsgAsync(m, jetstream.WithMsgID(f.ID.String()))
			if err != nil {
				return fmt.Errorf("fill: %w", err)
			}
			window = append(window, inflight{fut, r})
			busy[r] = true
		}
	}
	return settle(0)
}

// replayResult is one repetition of B4.
type replayResult struct{ factline, raw float64 }

// benchReplay replays the whole stream into the history projection through
// projections/replay, and reads it raw with an ordered consumer decoding
// each message with msgpack into generic values.
func benchReplay(ctx context.Context, b *bus.Bus, rep int, want int) (replayResult, error) {
	flRun := func() (float64, error) {
		t0 := time.Now()
		res, err := replay.Run(ctx, replay.Stream(b, bus.ReadOptions{}), projections.HistoryFold.Start(), nil)
		el := time.Since(t0)
		if err != nil {
			return 0, err
		}
		if res.Applied != want || len(res.Bad) > 0 {
			return 0, fmt.Errorf("replay applied %d facts (%d bad), want %d", res.Applied, len(res.Bad), want)
		}
		return float64(res.Applied) / el.Seconds(), nil
	}
	rawRun := func() (float64, error) {
		t0 := time.Now()
		n, err := rawRead(ctx, b.JetStream())
		el := time.Since(t0)
		if err != nil {
			return 0, err
		}
		if n != want {
			return 0, fmt.Errorf("raw read %d messages, want %d", n, want)
		}
		return float64(n) / el.Seconds(), nil
	}
	var r replayResult
	var err error
	// Alternate which side goes first: the second read finds warmer caches.
	if rep%2 == 0 {
		if r.factline, err = flRun(); err == nil {
			r.raw, err = rawRun()
		}
	} else {
		if r.raw, err = rawRun(); err == nil {
			r.factline, err = flRun()
		}
	}
	return r, err
}

// rawRead reads FACTS from the start with an ordered consumer, decoding
// every message into generic msgpack values.
func rawRead(ctx context.Context, js jetstream.JetStream) (int, error) {
	cons, err := js.OrderedConsumer(ctx, bus.FactsStream, jetstream.OrderedConsumerConfig{FilterSubjects: []string{"fact.>"}})
	if err != nil {
		return 0, err
	}
	iter, err := cons.Messages(jetstream.PullMaxMessages(readPrefect))
	if err != nil {
		return 0, err
	}
	defer iter.Stop()
	stop := context.AfterFunc(ctx, iter.Stop)
	defer stop()
	// Any keys: envelope version 3 writes body keys as numbers, which the
	// default generic map (string keys only) refuses. A reset drops the
	// map decoder, so it is set again for each message.
	var r bytes.Reader
	dec := msgpack.NewDecoder(&r)
	anyKeys := func(d *msgpack.Decoder) (any, error) { return d.DecodeUntypedMap() }
	n := 0
	for {
		m, err := iter.Next()
		if err != nil {
			if errors.Is(err, jetstream.ErrMsgIteratorClosed) && ctx.Err() != nil {
				return n, ctx.Err()
			}
			return n, err
		}
		md, err := m.Metadata()
		if err != nil {
			return n, err
		}
		r.Reset(m.Data())
		dec.Reset(&r)
		dec.SetMapDecoder(anyKeys)
		if _, err := dec.DecodeInterface(); err != nil {
			return n, fmt.Errorf("raw decode at %d: %w", md.Sequence.Stream, err)
		}
		n++
		if md.NumPending == 0 {
			return n, nil
		}
	}
}
