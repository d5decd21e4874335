package bench

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/factline/factline/bus"
	"github.com/factline/factline/events"
)

// latencyResult is one repetition of B3.
type latencyResult struct {
	p50, p99       time.Duration // factline: turn.started to the runner acting on stop.decided
	rawP50, rawP99 time.Duration // the same chain of appends and hops, raw
}

// stamped is a stored fact with the server's timestamp.
type stamped struct {
	f  events.Fact
	at time.Time
}

// readStamped reads the facts under filter with their stored timestamps.
func readStamped(ctx context.Context, b *bus.Bus, filter string) ([]stamped, error) {
	var out []stamped
	_, err := b.Read(ctx, bus.ReadOptions{Filter: filter}, func(r bus.Raw) error {
		f, err := events.Decode(r.Data)
		if err != nil {
			return err
		}
		out = append(out, stamped{f, r.Time})
		return nil
	})
	return out, err
}

// turnLatencies measures, for every turn of one run, the time from its
// turn.started being stored to the runner's next fact after the turn's
// stop.decided being stored: the runner acting on the decision (starting
// the next turn, or ending the run). Timestamps are the server's, so
// nothing the benchmark does in between is counted.
func turnLatencies(facts []stamped) []time.Duration {
	var out []time.Duration
	var started time.Time
	decided := false
	for _, s := range facts {
		switch s.f.Body.(type) {
		case events.TurnStarted:
			if decided {
				out = append(out, s.at.Sub(started))
			}
			started, decided = s.at, false
		case events.StopDecided:
			decided = true
			continue
		}
		if decided && s.f.Producer.Service == events.OwnerRunner {
			out = append(out, s.at.Sub(started))
			decided = false
		}
	}
	return out
}

// benchLatency runs one run of turns turns through the five services and
// measures its per-turn latency, then the raw chain of the same appends and
// hops.
func benchLatency(ctx context.Context, b *bus.Bus, dir, name string, turns int) (latencyResult, error) {
	if err := submitSuite(ctx, b, dir, name, 1, turns); err != nil {
		return latencyResult{}, err
	}
	if err := awaitReported(ctx, b, []string{name}, 2*time.Minute); err != nil {
		return latencyResult{}, err
	}
	facts, err := readStamped(ctx, b, events.SuiteFilter(name))
	if err != nil {
		return latencyResult{}, err
	}
	lat := turnLatencies(facts)
	if len(lat) != turns {
		return latencyResult{}, fmt.Errorf("B3: %d turn latencies from %d facts, want %d", len(lat), len(facts), turns)
	}
	raw, err := rawChain(ctx, b, name, turns)
	if err != nil {
		return latencyResult{}, fmt.Errorf("B3 raw: %w", err)
	}
	return latencyResult{p50: percentile(lat, 50), p99: percentile(lat, 99),
		rawP50: percentile(raw, 50), rawP99: percentile(raw, 99)}, nil
}

// rawSubject is where the raw chain publishes a kind: under the run's
// subjects, one token deeper than factline's own, so that the services
// running in the same process never consume it.
func rawSubject(suite, run string, kind events.Kind) string {
	return events.FactPrefix + "." + suite + "." + run + ".raw." + string(kind)
}

// rawChain plays one run's turns with raw JetStream: the runner's five
// sequential appends of a turn (turn.started, model.replied,
// dispatch.intended, dispatch.completed, turn.completed), a hop through a
// durable pull consumer to a "staller" that appends stall.observed, a hop
// to a "decider" that appends stop.decided, and a hop back to the "runner"
// (a core subscription, as the runner waits) that appends the next
// turn.started. The payloads are real encoded facts. It returns the same
// per-turn latency as turnLatencies, from the stored timestamps.
func rawChain(ctx context.Context, b *bus.Bus, name string, turns int) ([]time.Duration, error) {
	js := b.JetStream()
	suite, run := "raw"+name, "run-1"
	var pos uint64
	publish := func(ctx context.Context, p uint64) error {
		f, err := runFact(suite, run, p)
		if err != nil {
			return err
		}
		data, err := events.Encode(f)
		if err != nil {
			return err
		}
		subj := rawSubject(suite, run, f.Kind())
		_, err = js.PublishMsg(ctx, &nats.Msg{Subject: subj, Data: data}, jetstream.WithMsgID(f.ID.String()))
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	hop := func(consumer string, kind events.Kind, next uint64) (func(), error) {
		cons, err := js.CreateOrUpdateConsumer(ctx, bus.FactsStream, jetstream.ConsumerConfig{
			Durable: consumer, FilterSubject: rawSubject(suite, "*", kind),
			AckPolicy: jetstream.AckExplicitPolicy, AckWait: 30 * time.Second, MaxAckPending: 256,
		})
		if err != nil {
			return nil, err
		}
		iter, err := cons.Messages(jetstream.PullMaxMessages(8))
		if err != nil {
			return nil, err
		}
		done := make(chan struct{})
		go func() {
			defer close(done)
			for {
				m, err := iter.Next()
				if err != nil {
					return
				}
				// The answer takes the position after the fact answered.
				f, err := events.Decode(m.Data())
				if err != nil {
					return
				}
				if err := publish(ctx, f.Position+next); err != nil {
					return
				}
				_ = m.Ack()
			}
		}()
		return func() {
			iter.Stop()
			<-done
			_ = js.DeleteConsumer(context.Background(), bus.FactsStream, consumer)
		}, nil
	}
	stopS, err := hop("rawstaller"+name, events.KindTurnCompleted, 1)
	if err != nil {
		return nil, err
	}
	defer stopS()
	stopD, err := hop("rawdecider"+name, events.KindStallObserved, 1)
	if err != nil {
		return nil, err
	}
	defer stopD()
	wake := make(chan struct{}, 1)
	subj := rawSubject(suite, run, events.KindStopDecided)
	sub, err := b.Conn().Subscribe(subj, func(_ *nats.Msg) { wake <- struct{}{} })
	if err != nil {
		return nil, err
	}
	defer sub.Unsubscribe()
	for range turns {
		for range 5 {
			pos++
			if err := publish(ctx, pos); err != nil {
				return nil, err
			}
		}
		select {
		case <-wake:
		case <-time.After(30 * time.Second):
			return nil, errors.New("no stop.decided within 30s")
		}
		pos += 2
	}
	// The runner acts on the last decision.
	if err := publish(ctx, pos+1); err != nil {
		return nil, err
	}
	facts, err := readStamped(ctx, b, events.RunFilter(suite, run))
	if err != nil {
		return nil, err
	}
	lat := turnLatencies(facts)
	if len(lat) != turns {
		return nil, fmt.Errorf("%d turn latencies from %d facts, want %d", len(lat), len(facts), turns)
	}
	return lat, nil
}
