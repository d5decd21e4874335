package fleettest

import (
	"context"
	"fmt"
	"time"

	"github.com/factline/factline/bus"
	"github.com/factline/factline/cases"
	"github.com/factline/factline/events"
	"github.com/factline/factline/workspace"
)

// Published names a case and a treatment stored as blobs.
type Published struct {
	Case            *cases.Case
	CaseDigest      events.Digest
	Treatment       *cases.Treatment
	TreatmentDigest events.Digest
}

// Publish stores a case's fixture, the case and the treatment as blobs, as
// a submitter does, so any runner can fetch them by digest.
func Publish(ctx context.Context, b *bus.Bus, c *cases.Case, t *cases.Treatment) (Published, error) {
	if c.Fixture != "" {
		m, err := workspace.Store(ctx, b.Blobs(), c.Fixture, workspace.Options{})
		if err != nil {
			return Published{}, fmt.Errorf("store fixture of %s: %w", c.ID, err)
		}
		c.FixtureDigest = m.Digest()
	}
	cd, err := c.Encode()
	if err != nil {
		return Published{}, err
	}
	td, err := t.Encode()
	if err != nil {
		return Published{}, err
	}
	p := Published{Case: c, Treatment: t}
	if p.CaseDigest, err = b.Blobs().Put(ctx, cd); err != nil {
		return Published{}, err
	}
	if p.TreatmentDigest, err = b.Blobs().Put(ctx, td); err != nil {
		return Published{}, err
	}
	return p, nil
}

// Request commits run.requested for one attempt of a published case.
func Request(ctx context.Context, b *bus.Bus, suite, run string, p Published, trial uint32) error {
	_, err := b.Commit(ctx, nil, suite, run, func(log bus.RunLog) ([]bus.Pending, error) {
		f, err := events.NewFact(events.Meta{Suite: suite, Run: run, TaskGeneration: 1, Position: log.NextPosition(),
			Producer: events.Producer{Service: events.OwnerMeter, Instance: "test"}},
			events.RunRequested{Case: p.Case.ID, CaseDigest: p.CaseDigest, Treatment: p.Treatment.ID,
				TreatmentDigest: p.TreatmentDigest, Trial: trial,
				Budget: events.Budget{Steps: p.Case.Budget.Steps, Tokens: p.Case.Budget.InputTokens + p.Case.Budget.OutputTokens,
					Seconds: uint32(p.Case.Budget.Wall.Std().Seconds()), Cost: p.Case.Budget.Cost}})
		return []bus.Pending{{Fact: f, MsgID: events.MessageID(run, events.KindRunRequested)}}, err
	})
	return err
}

// WaitEnded waits until the run has ended and returns its log.
func WaitEnded(ctx context.Context, b *bus.Bus, suite, run string) (bus.RunLog, events.RunEnded, error) {
	wake, stop, err := b.WakeOn(suite, run, events.KindRunEnded)
	if err != nil {
		return bus.RunLog{}, events.RunEnded{}, err
	}
	defer stop()
	for {
		log, err := b.LoadRun(ctx, suite, run)
		if err != nil {
			return log, events.RunEnded{}, err
		}
		for _, r := range log.Records {
			if e, ok := r.Fact.Body.(events.RunEnded); ok {
				return log, e, nil
			}
		}
		select {
		case <-wake:
		case <-time.After(500 * time.Millisecond):
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			return log, events.RunEnded{}, fmt.Errorf("run %s did not end: %w", run, ctx.Err())
		}
	}
}
