package bus

import (
	"context"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"
)

// editFacts applies edit to FACTS' configuration as the server has it and
// updates the stream when edit says the configuration changed; it reports
// whether it did. what names the change in errors. Each of factline
// setup's changes to an existing stream (append-only, the announcement of
// stored decisions, compression) is one such edit.
func (b *Bus) editFacts(ctx context.Context, what string, edit func(*jetstream.StreamConfig) (bool, error)) (bool, error) {
	actx, cancel := apiCtx(ctx)
	defer cancel()
	s, err := b.js.Stream(actx, FactsStream)
	if err != nil {
		return false, fmt.Errorf("look up stream %s: %w", FactsStream, err)
	}
	cfg := s.CachedInfo().Config
	changed, err := edit(&cfg)
	if err != nil || !changed {
		return false, err
	}
	if _, err := b.js.UpdateStream(actx, cfg); err != nil {
		return false, fmt.Errorf("%s on stream %s: %w", what, FactsStream, err)
	}
	return true, nil
}
