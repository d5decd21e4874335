package bench

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/factline/factline/bus"
	"github.com/factline/factline/events"
)

// rawSubject is where the raw chain publishes a kind: under the run's
// subjects, one token deeper than factline's own, so that the services
// running in the same process never consume it.
func rawSubject(suite, run string, kind events.Kind) string {
	return events.FactPrefix + "." + suite + "." + run + ".raw." + string(kind)
}

// rawHopWorkers is how many answers each raw hop works on at once: as many
// as the stall handler's and the decider's default workers, so that the
// baseline of many runs at once is not held up by a hop that factline's
// services do not have.
const rawHopWorkers = 16

// rawChainResult is what one raw chain measured.
type rawChainResult struct {
	latencies []time.Duration // the first run's, per turn
	turns     int             // turns played, over all runs
	facts     int             // facts appended, over all runs
	elapsed   time.Duration   // from the first append to the last run's end
}

func (r rawChainResult) turnsPerSec() float64 { return float64(r.turns) / r.elapsed.Seconds() }

// rawChain plays runs runs of turns turns each, at once, with raw
// JetStream: per turn a run's "runner" makes five sequential appends
// (turn.started, model.replied, dispatch.intended, dispatch.completed,
// turn.completed), a hop through a durable pull consumer to a "staller"
// appends stall.observed, a hop to a "decider" appends stop.decided, and a
// hop back to the "runner" (a core subscription, as the runner waits)
// starts the next turn. The payloads are real encoded facts. It returns
// the first run's per-turn latency as turnLatencies measures factline's,
// from the stored timestamps, and the whole chain's rate.
func rawChain(ctx context.Context, b *bus.Bus, name string, runs, turns int) (rawChainResult, error) {
	js := b.JetStream()
	suite := "raw" + name
	runName := func(i int) string { return fmt.Sprintf("run-%d", i+1) }
	publish := func(ctx context.Context, run string, p uint64) error {
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
	hop := func(consumer string, kind events.Kind) (func(), error) {
		cons, err := js.CreateOrUpdateConsumer(ctx, bus.FactsStream, jetstream.ConsumerConfig{
			Durable: consumer, FilterSubject: rawSubject(suite, "*", kind),
			AckPolicy: jetstream.AckExplicitPolicy, AckWait: 30 * time.Second, MaxAckPending: 256,
		})
		if err != nil {
			return nil, err
		}
		iter, err := cons.Messages(jetstream.PullMaxMessages(max(8, rawHopWorkers)))
		if err != nil {
			return nil, err
		}
		work := make(chan jetstream.Msg)
		var wg sync.WaitGroup
		wg.Go(func() {
			defer close(work)
			for {
				m, err := iter.Next()
				if err != nil {
					return
				}
				work <- m
			}
		})
		for range rawHopWorkers {
			wg.Go(func() {
				for m := range work {
					// The answer takes the position after the fact answered.
					f, err := events.Decode(m.Data())
					if err != nil {
						continue
					}
					if err := publish(ctx, f.Run, f.Position+1); err != nil {
						continue
					}
					_ = m.Ack()
				}
			})
		}
		return func() {
			iter.Stop()
			wg.Wait()
			_ = js.DeleteConsumer(context.Background(), bus.FactsStream, consumer)
		}, nil
	}
	stopS, err := hop("rawstaller"+name, events.KindTurnCompleted)
	if err != nil {
		return rawChainResult{}, err
	}
	defer stopS()
	stopD, err := hop("rawdecider"+name, events.KindStallObserved)
	if err != nil {
		return rawChainResult{}, err
	}
	defer stopD()
	// One subscription wakes every run's "runner" on its stop.decided.
	wakes := make([]chan struct{}, runs)
	byRun := map[string]chan struct{}{}
	for i := range runs {
		wakes[i] = make(chan struct{}, 1)
		byRun[runName(i)] = wakes[i]
	}
	sub, err := b.Conn().Subscribe(rawSubject(suite, "*", events.KindStopDecided), func(m *nats.Msg) {
		// fact.<suite>.<run>.raw.stop.decided
		if tok := strings.SplitN(m.Subject, ".", 4); len(tok) == 4 {
			if w := byRun[tok[2]]; w != nil {
				select {
				case w <- struct{}{}:
				default:
				}
			}
		}
	})
	if err != nil {
		return rawChainResult{}, err
	}
	defer sub.Unsubscribe()
	t0 := time.Now()
	errs := make([]error, runs)
	var wg sync.WaitGroup
	for i := range runs {
		wg.Go(func() {
			run := runName(i)
			var pos uint64
			for range turns {
				for range 5 {
					pos++
					if err := publish(ctx, run, pos); err != nil {
						errs[i] = err
						return
					}
				}
				select {
				case <-wakes[i]:
				case <-time.After(time.Minute):
					errs[i] = fmt.Errorf("%s: no stop.decided within a minute", run)
					return
				case <-ctx.Done():
					errs[i] = ctx.Err()
					return
				}
				pos += 2
			}
			// The runner acts on the last decision.
			errs[i] = publish(ctx, run, pos+1)
		})
	}
	wg.Wait()
	res := rawChainResult{turns: runs * turns, facts: runs * (7*turns + 1), elapsed: time.Since(t0)}
	if err := errors.Join(errs...); err != nil {
		return res, err
	}
	facts, err := readStampedWith(ctx, b, events.RunFilter(suite, runName(0)), func(r bus.Raw) (events.Fact, error) { return events.Decode(r.Data) })
	if err != nil {
		return res, err
	}
	res.latencies = turnLatencies(facts)
	if len(res.latencies) != turns {
		return res, fmt.Errorf("%d turn latencies from %d facts, want %d", len(res.latencies), len(facts), turns)
	}
	return res, nil
}
