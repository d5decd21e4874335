package recorded

import (
	"context"
	"fmt"
	"sync"

	"github.com/factline/factline/bus"
	"github.com/factline/factline/cases"
	"github.com/factline/factline/cases/caseload"
	"github.com/factline/factline/events"
	"github.com/factline/factline/suites"
)

// FromBus resolves runs from the case and treatment blobs of the store
// they ran on, as the services do.
func FromBus(b *bus.Bus) Resolver {
	cache := caseload.New(0)
	return func(ctx context.Context, req events.RunRequested) (cases.Effective, error) {
		return cache.ForRequest(ctx, b, req)
	}
}

// FromSuite resolves runs from a suite file and the case and treatment
// files it names: an export file holds facts, not blobs. A case or a
// treatment is matched by its digest, so a file edited since the run is
// refused rather than replayed under the wrong policy.
func FromSuite(ctx context.Context, path string) (Resolver, error) {
	s, err := suites.Load(path)
	if err != nil {
		return nil, err
	}
	blobs := &memBlobs{m: map[events.Digest][]byte{}}
	byCase := map[events.Digest]*cases.Case{}
	byTreatment := map[events.Digest]*cases.Treatment{}
	for _, c := range s.Cases {
		ref, err := suites.PublishCase(ctx, blobs, c)
		if err != nil {
			return nil, err
		}
		byCase[ref.Digest] = c
	}
	for _, t := range s.Treatments {
		ref, err := suites.PublishTreatment(ctx, blobs, t)
		if err != nil {
			return nil, err
		}
		byTreatment[ref.Digest] = t
	}
	return func(_ context.Context, req events.RunRequested) (cases.Effective, error) {
		c, ok := byCase[req.CaseDigest]
		if !ok {
			return cases.Effective{}, fmt.Errorf("case %s (%s): %w %s", req.Case, req.CaseDigest, ErrNotInSuite, path)
		}
		t, ok := byTreatment[req.TreatmentDigest]
		if !ok {
			return cases.Effective{}, fmt.Errorf("treatment %s (%s): %w %s", req.Treatment, req.TreatmentDigest, ErrNotInSuite, path)
		}
		return cases.Apply(c, t), nil
	}, nil
}

// memBlobs computes the digests publishing would give, keeping the data in
// memory.
type memBlobs struct {
	mu sync.Mutex
	m  map[events.Digest][]byte
}

func (b *memBlobs) Put(_ context.Context, data []byte) (events.Digest, error) {
	d := events.DigestOf(data)
	b.mu.Lock()
	b.m[d] = data
	b.mu.Unlock()
	return d, nil
}

func (b *memBlobs) Get(_ context.Context, d events.Digest) ([]byte, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	data, ok := b.m[d]
	if !ok {
		return nil, fmt.Errorf("blob %s: not found", d)
	}
	return data, nil
}
