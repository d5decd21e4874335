package suites

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"

	"github.com/factline/factline/bus"
	"github.com/factline/factline/cases"
	"github.com/factline/factline/events"
	"github.com/factline/factline/sandbox"
	"github.com/factline/factline/workspace"
)

// Spec is the resolved suite as stored in the blob suite.submitted names by
// spec_digest: the file's settings with every case and treatment pinned by
// content digest.
type Spec struct {
	Name          string             `json:"name"`
	Description   string             `json:"description,omitempty"`
	Split         string             `json:"split"`
	Cases         []events.Ref       `json:"cases"`
	Treatments    []events.Ref       `json:"treatments"`
	Trials        uint32             `json:"trials"`
	Required      []string           `json:"required,omitempty"`
	ValidOutcomes []events.RunStatus `json:"valid_outcomes"`
	Skipped       []string           `json:"skipped,omitempty"`
	// Dataset pins the data file cases were made from, if any.
	Dataset *DatasetRef `json:"dataset,omitempty"`
	// Stopping is the file's early-stopping block, if any.
	Stopping *Stopping `json:"stopping,omitempty"`
}

// Published is a suite whose fixtures, cases and treatments are in the blob
// store, with the suite.submitted body that fixes its roster.
type Published struct {
	Submitted events.SuiteSubmitted
	Spec      Spec
}

// Publish stores every case's fixture (as a content-addressed workspace),
// every case and treatment (as canonical JSON) and the resolved spec, so
// that any runner or grader anywhere needs nothing but the bus. It sets each
// case's FixtureDigest.
func Publish(ctx context.Context, blobs workspace.Blobs, s *Suite) (*Published, error) {
	spec := Spec{Name: s.File.Name, Description: s.File.Description, Split: s.File.Split, Trials: s.File.Trials,
		Required: s.File.Required, ValidOutcomes: s.File.ValidOutcomes, Skipped: s.Skipped,
		Stopping: s.File.Stopping, Dataset: s.Dataset}
	for _, c := range s.Cases {
		ref, err := PublishCase(ctx, blobs, c)
		if err != nil {
			return nil, err
		}
		spec.Cases = append(spec.Cases, ref)
	}
	for _, t := range s.Treatments {
		ref, err := PublishTreatment(ctx, blobs, t)
		if err != nil {
			return nil, err
		}
		spec.Treatments = append(spec.Treatments, ref)
	}
	data, err := json.Marshal(spec)
	if err != nil {
		return nil, fmt.Errorf("suite %s: %w", spec.Name, err)
	}
	d, err := blobs.Put(ctx, data)
	if err != nil {
		return nil, fmt.Errorf("suite %s: store the spec: %w", spec.Name, err)
	}
	sub := events.SuiteSubmitted{Name: spec.Name, SpecDigest: d, Cases: spec.Cases, Treatments: spec.Treatments,
		Trials: spec.Trials, Split: spec.Split, ValidOutcomes: spec.ValidOutcomes}
	for _, id := range spec.Required {
		sub.Required = append(sub.Required, events.InstrumentID(id))
	}
	if err := events.ValidateBody(sub); err != nil {
		return nil, fmt.Errorf("suite %s: %w", spec.Name, err)
	}
	return &Published{Submitted: sub, Spec: spec}, nil
}

// PublishCase stores a case's fixture (setting FixtureDigest) and the case,
// with its environment's image resolved to a digest (see ResolveImage).
func PublishCase(ctx context.Context, blobs workspace.Blobs, c *cases.Case) (events.Ref, error) {
	if err := ResolveImage(ctx, c.Environment); err != nil {
		return events.Ref{}, fmt.Errorf("case %s: %w", c.ID, err)
	}
	if c.Fixture != "" {
		if _, err := os.Stat(c.Fixture); err != nil {
			return events.Ref{}, fmt.Errorf("case %s: fixture: %w", c.ID, err)
		}
		m, err := workspace.Store(ctx, blobs, c.Fixture, workspace.Options{})
		if err != nil {
			return events.Ref{}, fmt.Errorf("case %s: store the fixture: %w", c.ID, err)
		}
		c.FixtureDigest = m.Digest()
	}
	data, err := c.Encode()
	if err != nil {
		return events.Ref{}, fmt.Errorf("case %s: %w", c.ID, err)
	}
	d, err := blobs.Put(ctx, data)
	if err != nil {
		return events.Ref{}, fmt.Errorf("case %s: %w", c.ID, err)
	}
	return events.Ref{ID: c.ID, Digest: d}, nil
}

// PublishTreatment stores a treatment, with its default environment's
// image resolved to a digest (see ResolveImage).
func PublishTreatment(ctx context.Context, blobs workspace.Blobs, t *cases.Treatment) (events.Ref, error) {
	if err := ResolveImage(ctx, t.Environment); err != nil {
		return events.Ref{}, fmt.Errorf("treatment %s: %w", t.ID, err)
	}
	data, err := t.Encode()
	if err != nil {
		return events.Ref{}, fmt.Errorf("treatment %s: %w", t.ID, err)
	}
	d, err := blobs.Put(ctx, data)
	if err != nil {
		return events.Ref{}, fmt.Errorf("treatment %s: %w", t.ID, err)
	}
	return events.Ref{ID: t.ID, Digest: d}, nil
}

// ResolveImage pins an environment's image by digest, asking the
// container engine the environment names (sandbox.EngineFromEnv), once,
// when the suite is published: the digest is what every runner and
// grader runs, and part of the case (or treatment) digest and of the
// agent identity. An image the engine does not hold is a
// *sandbox.ImageError here, before any run is requested. An environment
// already pinned (a stored case published again) keeps its digest.
func ResolveImage(ctx context.Context, env *cases.Environment) error {
	if env == nil || env.ImageDigest != "" {
		return nil
	}
	d, err := sandbox.EngineFromEnv().ResolveImage(ctx, env.Image)
	if err != nil {
		return fmt.Errorf("environment: %w", err)
	}
	env.ImageDigest = d
	return nil
}

// ErrSuiteExists is returned when a suite of the same name was submitted
// with another roster: a suite name holds one roster for good.
var ErrSuiteExists = errors.New("a different suite was already submitted under this name")

// SubmitMsgID is the message ID of a suite's suite.submitted.
var SubmitMsgID = events.MessageID(events.SuiteScope, events.KindSuiteSubmitted)

// Submit commits suite.submitted for a published suite, as the submitter;
// the meter then requests its runs. Submitting the same suite again is a
// no-op; submitting another roster under the same name is an *ExistsError
// (errors.Is ErrSuiteExists) saying what differs.
func Submit(ctx context.Context, b *bus.Bus, p *Published, instance string) error {
	name := p.Submitted.Name
	_, err := b.Commit(ctx, nil, name, events.SuiteScope, func(log bus.RunLog) ([]bus.Pending, error) {
		for _, r := range log.Records {
			if s, ok := r.Fact.Body.(events.SuiteSubmitted); ok {
				if s.SpecDigest == p.Submitted.SpecDigest {
					return nil, nil
				}
				return nil, &ExistsError{Name: name, Had: s.SpecDigest, Want: p.Submitted.SpecDigest}
			}
		}
		f, err := events.NewFact(events.Meta{Suite: name, Run: events.SuiteScope, Position: log.NextPosition(),
			Producer: events.Producer{Service: events.OwnerSubmitter, Instance: instance}}, p.Submitted)
		return []bus.Pending{{Fact: f, MsgID: SubmitMsgID}}, err
	})
	var exists *ExistsError
	if errors.As(err, &exists) {
		// What differs, read from the spec the log holds: the refusal
		// then says what the edit changed. Unread, it names the digests.
		if data, gerr := b.Blobs().Get(ctx, exists.Had); gerr == nil {
			var had Spec
			if json.Unmarshal(data, &had) == nil {
				exists.Differs = DiffSpecs(had, p.Spec)
			}
		}
		return exists
	}
	if err != nil {
		return fmt.Errorf("submit suite %s: %w", name, err)
	}
	return nil
}
