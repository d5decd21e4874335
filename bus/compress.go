package bus

import (
	"context"

	"github.com/nats-io/nats.go/jetstream"
)

// factsCompression is FACTS' block compression for Config.CompressFacts.
func factsCompression(on bool) jetstream.StoreCompression {
	if on {
		return jetstream.S2Compression
	}
	return jetstream.NoCompression
}

// CompressFacts sets whether FACTS stores its sealed message blocks
// S2-compressed, as factline setup --compress does, and reports whether it
// changed the stream's configuration. Facts, their order and sequences do
// not change: the server compresses a block once it is full, and
// decompresses it whole to read from it, so a turn costs a fraction of its
// bytes on disk and the first read of an old run from a sealed block waits
// for that block (docs/operations.md measures both). A running server
// compresses by the setting it opened the store with: a change takes
// effect for the blocks sealed after the server next opens the store (a
// restart; an embedded store, at the next command). A stream created with
// Config.CompressFacts compresses from the start.
func (b *Bus) CompressFacts(ctx context.Context, on bool) (bool, error) {
	want := factsCompression(on)
	return b.editFacts(ctx, "set compression "+want.String(), func(cfg *jetstream.StreamConfig) (bool, error) {
		if cfg.Compression == want {
			return false, nil
		}
		cfg.Compression = want
		return true, nil
	})
}
