package recorded

import (
	"context"
	"fmt"
	"os"
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
// files it names: an export written without blobs holds facts only. A case or a
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

// FromExport resolves runs from the case and treatment blobs a version 3
// export file holds, read again from the file when a run needs them. It
// returns the file's version; for an older file, which holds no blobs, the
// Resolver is nil and the caller needs the suite file (FromSuite).
func FromExport(path string) (Resolver, int, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, 0, err
	}
	where := map[events.Digest]bus.ExportBlob{}
	version, err := bus.ReadExportWith(f, bus.ExportVisitor{Blob: func(b bus.ExportBlob) error {
		where[b.Digest] = b
		return nil
	}})
	f.Close()
	if err != nil || version < 3 {
		return nil, version, err
	}
	return FromExportBlobs(path, where), version, nil
}

// FromExportBlobs resolves runs from the case and treatment blobs of the
// version 3 export file at path, where (from bus.ReadExportWith) says where
// each blob is in the file: for a caller that has read the file once
// already. Each blob is read again, and checked, when a run needs it.
func FromExportBlobs(path string, where map[events.Digest]bus.ExportBlob) Resolver {
	read := func(what string, d events.Digest) ([]byte, error) {
		at, ok := where[d]
		if !ok {
			return nil, fmt.Errorf("%s %s: the export %s holds no such blob (its store did not hold it when it was exported)", what, d, path)
		}
		f, err := os.Open(path)
		if err != nil {
			return nil, fmt.Errorf("%s %s: %w", what, d, err)
		}
		defer f.Close()
		return bus.ReadExportBlob(f, at)
	}
	var mu sync.Mutex
	resolved := map[[2]events.Digest]cases.Effective{}
	return func(_ context.Context, req events.RunRequested) (cases.Effective, error) {
		key := [2]events.Digest{req.CaseDigest, req.TreatmentDigest}
		mu.Lock()
		eff, ok := resolved[key]
		mu.Unlock()
		if ok {
			return eff, nil
		}
		cdata, err := read("case", req.CaseDigest)
		if err != nil {
			return cases.Effective{}, err
		}
		c, err := cases.DecodeCase(cdata)
		if err != nil {
			return cases.Effective{}, fmt.Errorf("case %s (%s): %w", req.Case, req.CaseDigest, err)
		}
		tdata, err := read("treatment", req.TreatmentDigest)
		if err != nil {
			return cases.Effective{}, err
		}
		t, err := cases.DecodeTreatment(tdata)
		if err != nil {
			return cases.Effective{}, fmt.Errorf("treatment %s (%s): %w", req.Treatment, req.TreatmentDigest, err)
		}
		eff = cases.Apply(c, t)
		mu.Lock()
		resolved[key] = eff
		mu.Unlock()
		return eff, nil
	}
}
