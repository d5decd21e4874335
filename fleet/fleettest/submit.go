package fleettest

import (
	"context"
	"fmt"

	"github.com/factline/factline/bus"
	"github.com/factline/factline/suites"
)

// SubmitFile does what factline run does before its services take over:
// it loads the suite file at path, publishes its cases and treatments as
// blobs and submits it, as instance by of the submitter.
func SubmitFile(ctx context.Context, b *bus.Bus, path, by string) (*suites.Published, error) {
	s, err := suites.Load(path)
	if err != nil {
		return nil, err
	}
	p, err := suites.Publish(ctx, b.Blobs(), s)
	if err != nil {
		return nil, fmt.Errorf("publish %s: %w", path, err)
	}
	if err := suites.Submit(ctx, b, p, by); err != nil {
		return nil, fmt.Errorf("submit %s: %w", path, err)
	}
	return p, nil
}
