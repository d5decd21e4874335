package bus

import (
	"context"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"
)

// storedFactsConfig is FACTS' configuration as the server has it.
func (b *Bus) storedFactsConfig(ctx context.Context) (jetstream.StreamConfig, error) {
	actx, cancel := apiCtx(ctx)
	defer cancel()
	s, err := b.js.Stream(actx, FactsStream)
	if err != nil {
		return jetstream.StreamConfig{}, fmt.Errorf("look up stream %s: %w", FactsStream, err)
	}
	return s.CachedInfo().Config, nil
}

// editFacts applies edit to FACTS' configuration as the server has it and
// updates the stream when edit says the configuration changed; it reports
// whether it did. what names the change in errors. Each of factline
// setup's changes to an existing stream (append-only, the announcement of
// stored decisions, compression) is one such edit.
func (b *Bus) editFacts(ctx context.Context, what string, edit func(*jetstream.StreamConfig) (bool, error)) (bool, error) {
	cfg, err := b.storedFactsConfig(ctx)
	if err != nil {
		return false, err
	}
	changed, err := edit(&cfg)
	if err != nil || !changed {
		return false, err
	}
	actx, cancel := apiCtx(ctx)
	defer cancel()
	if _, err := b.js.UpdateStream(actx, cfg); err != nil {
		return false, fmt.Errorf("%s on stream %s: %w", what, FactsStream, err)
	}
	return true, nil
}
