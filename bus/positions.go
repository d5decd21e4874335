package bus

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/factline/factline/events"
)

// SavePosition records that the named projection has applied every fact up
// to stream sequence seq.
func (b *Bus) SavePosition(ctx context.Context, name string, seq uint64) error {
	if err := events.ValidateToken("projection name", name); err != nil {
		return fmt.Errorf("save position: %w", err)
	}
	actx, cancel := apiCtx(ctx)
	defer cancel()
	if _, err := b.pos.Put(actx, name, []byte(strconv.FormatUint(seq, 10))); err != nil {
		return fmt.Errorf("save position %s: %w", name, err)
	}
	return nil
}

// LoadPosition returns the saved position of the named projection, 0 if it
// has none.
func (b *Bus) LoadPosition(ctx context.Context, name string) (uint64, error) {
	if err := events.ValidateToken("projection name", name); err != nil {
		return 0, fmt.Errorf("load position: %w", err)
	}
	actx, cancel := apiCtx(ctx)
	defer cancel()
	e, err := b.pos.Get(actx, name)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("load position %s: %w", name, err)
	}
	seq, err := strconv.ParseUint(string(e.Value()), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("load position %s: stored value %q is not a sequence", name, e.Value())
	}
	return seq, nil
}
