// Package caseload finds the case and treatment a run was requested under,
// from the blobs its run.requested names, for the services that apply a
// case's policy (the stall handler, the stop decider, the grader). Decoded
// cases are cached by digest, so each is read and checked once.
package caseload

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/factline/factline/bus"
	"github.com/factline/factline/cases"
	"github.com/factline/factline/events"
)

// Cache keeps decoded cases under treatments by their blob digests, so
// a service reads and checks each case once, not once per turn. It holds at
// most max entries and forgets the oldest first.
type Cache struct {
	mu    sync.Mutex
	max   int
	m     map[string]cases.Effective
	order []string
}

// New returns a cache of at most max entries (default 256).
func New(max int) *Cache {
	if max <= 0 {
		max = 256
	}
	return &Cache{max: max, m: map[string]cases.Effective{}}
}

// Effective returns the case under its treatment for the run whose log is
// given. A run without run.requested, a missing blob or a blob that does not
// decode is a permanent error: no retry can make it readable.
func (c *Cache) Effective(ctx context.Context, b *bus.Bus, log bus.RunLog) (cases.Effective, error) {
	req, ok := log.Requested()
	if !ok {
		return cases.Effective{}, bus.Permanent(errors.New("the run has no run.requested, so its case and stall policy are unknown"))
	}
	return c.ForRequest(ctx, b, req)
}

// ForRequest returns the case under its treatment that a run.requested
// names. A missing blob or one that does not decode is a permanent error.
func (c *Cache) ForRequest(ctx context.Context, b *bus.Bus, req events.RunRequested) (cases.Effective, error) {
	key := string(req.CaseDigest) + "|" + string(req.TreatmentDigest)
	c.mu.Lock()
	eff, ok := c.m[key]
	c.mu.Unlock()
	if ok {
		return eff, nil
	}
	cdata, err := blob(ctx, b, "case", req.CaseDigest)
	if err != nil {
		return cases.Effective{}, err
	}
	kase, err := cases.DecodeCase(cdata)
	if err != nil {
		return cases.Effective{}, bus.Permanent(fmt.Errorf("case %s (%s): %w", req.Case, req.CaseDigest, err))
	}
	tdata, err := blob(ctx, b, "treatment", req.TreatmentDigest)
	if err != nil {
		return cases.Effective{}, err
	}
	tr, err := cases.DecodeTreatment(tdata)
	if err != nil {
		return cases.Effective{}, bus.Permanent(fmt.Errorf("treatment %s (%s): %w", req.Treatment, req.TreatmentDigest, err))
	}
	eff = cases.Apply(kase, tr)
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.m[key]; !ok {
		c.m[key] = eff
		c.order = append(c.order, key)
		for len(c.order) > c.max {
			delete(c.m, c.order[0])
			c.order = c.order[1:]
		}
	}
	return eff, nil
}

func blob(ctx context.Context, b *bus.Bus, what string, d events.Digest) ([]byte, error) {
	data, err := b.Blobs().Get(ctx, d)
	if errors.Is(err, bus.ErrBlobNotFound) {
		return nil, bus.Permanent(fmt.Errorf("%s blob: %w", what, err))
	}
	if err != nil {
		return nil, fmt.Errorf("%s blob: %w", what, err)
	}
	return data, nil
}
