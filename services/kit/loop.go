package kit

import (
	"context"
	"errors"
	"fmt"

	"github.com/factline/factline/bus"
	"github.com/factline/factline/cases"
	"github.com/factline/factline/events"
)

// Run consumes the service's durable consumer with handle until ctx is
// done, then returns nil (or the consumer's error). Deliveries in progress
// at shutdown are handed back to other instances unfinished. attrs go on
// the "started" log line.
func (s *Shell) Run(ctx context.Context, handle bus.Handler, attrs ...any) error {
	s.Log.Info(string(s.owner)+" started", attrs...)
	defer s.Log.Info(string(s.owner) + " stopped")
	if err := s.Bus.Consume(ctx, s.consumer, handle); err != nil {
		return fmt.Errorf("%s: %w", s.owner, err)
	}
	return nil
}

// Delivered returns the delivered fact's body as a T, or a permanent error
// naming the kind delivered instead: no retry changes a fact's kind.
func Delivered[T events.Body](s *Shell, d bus.Delivery) (T, error) {
	b, ok := d.Fact.Body.(T)
	if !ok {
		var want T
		return want, bus.Permanent(fmt.Errorf("%s: delivered %s, want %s", s.owner, d.Fact.Kind(), want.Kind()))
	}
	return b, nil
}

// Step is the work one delivered fact of a run asks of a service that
// answers it with facts of its own, in the run.
type Step struct {
	// What names the work in errors ("turn 3").
	What string
	// Done says whether the run already holds the answer: a redelivery,
	// or another instance was first. Then nothing more is read.
	Done func(bus.RunLog) bool
	// Decide returns what to append to the run as loaded, given the case
	// under its treatment; nothing when nothing is due. After a conflict
	// it is called again on the reloaded run, so it must find its own
	// answer there (by message ID) and return nothing.
	Decide func(log bus.RunLog, eff cases.Effective) ([]bus.Pending, error)
	// Committed, when set, sees each fact the step appended, never a
	// duplicate: where metrics are counted and decisions logged.
	Committed func(bus.Record)
}

// Decide does the consume-load-decide-commit of one delivery, exactly
// once: it loads the run through the delivered fact, returns at once when
// step.Done, reads the run's case under its treatment (a run whose case
// cannot be read fails permanently, see caseload), and commits what
// step.Decide returns with the run-wide optimistic concurrency of
// bus.Commit. A redelivery, or two instances handling one delivery, find
// the committed answer and append nothing.
func (s *Shell) Decide(ctx context.Context, d bus.Delivery, step Step) error {
	if s.Runs == nil || s.Policies == nil {
		return errors.New(string(s.owner) + ": Decide needs a run cache and a policy cache")
	}
	suite, run := d.Fact.Suite, d.Fact.Run
	log, err := s.Runs.LoadDelivered(ctx, d)
	if err != nil {
		return fmt.Errorf("%s: load %s/%s: %w", s.owner, suite, run, err)
	}
	if step.Done(log) {
		return nil
	}
	eff, err := s.Policies.Effective(ctx, s.Bus, log)
	if err != nil {
		return fmt.Errorf("%s: %s/%s: %w", s.owner, suite, run, err)
	}
	decide := func(log bus.RunLog) ([]bus.Pending, error) { return step.Decide(log, eff) }
	commit := s.Bus.Commit
	if log.LastSeq == d.Seq {
		// The delivered fact was the run's newest a moment ago: decide on
		// the log just loaded instead of asking the server again. If the
		// run moved on meanwhile, the append's run-wide expected sequence
		// refuses it and the decision is made again on a fresh load.
		commit = s.Bus.CommitAsLastWriter
	}
	recs, err := commit(ctx, s.Runs, suite, run, decide)
	if err != nil {
		return fmt.Errorf("%s: %s of %s/%s: %w", s.owner, step.What, suite, run, err)
	}
	if step.Committed != nil {
		for _, r := range recs {
			if !r.Duplicate {
				step.Committed(r)
			}
		}
	}
	return nil
}

// Fact makes a fact this instance writes: m's producer becomes the
// service and this instance.
func (s *Shell) Fact(m events.Meta, body events.Body) (events.Fact, error) {
	m.Producer = events.Producer{Service: s.owner, Instance: s.Instance}
	return events.NewFact(m, body)
}
