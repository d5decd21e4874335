package bus

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/factline/factline/events"
)

// CacheBucket is the key-value bucket of the response cache: under a
// digest of a model identity and a rendered request, the digest of the
// blob that holds a reply of that model to that request. The bucket holds
// only pointers; whoever reads an entry verifies the blob it names.
const CacheBucket = "CACHE"

// responsesBucket opens the response cache's bucket on first use: only
// treatments with a cache need it, so a bus that never caches (or a
// service identity that may not reach it) never looks it up.
type responsesBucket struct {
	mu sync.Mutex
	kv jetstream.KeyValue
}

func (b *Bus) responsesKV(ctx context.Context) (jetstream.KeyValue, error) {
	b.responses.mu.Lock()
	defer b.responses.mu.Unlock()
	if b.responses.kv != nil {
		return b.responses.kv, nil
	}
	kv, err := b.openKV(ctx, CacheBucket, "factline response cache: model identity and request digest to a reply blob")
	if err != nil {
		return nil, err
	}
	b.responses.kv = kv
	return kv, nil
}

// ResponseCache is a bus's handle on the response cache (the CACHE
// bucket), shared by every process on the store; not to be confused with
// RunLogs, which keeps run logs in one service's memory.
type ResponseCache struct{ b *Bus }

// Responses returns the bus's handle on the response cache.
func (b *Bus) Responses() *ResponseCache { return &ResponseCache{b: b} }

// Ensure looks the response cache's bucket up and creates it when it
// does not exist (factline setup, as an identity allowed to).
func (h *ResponseCache) Ensure(ctx context.Context) error {
	_, err := h.b.responsesKV(ctx)
	return err
}

// Get returns what the response cache holds under key, and false
// when it holds nothing. The value is whatever was stored: the caller
// checks it before trusting it.
func (h *ResponseCache) Get(ctx context.Context, key events.Digest) (string, bool, error) {
	b := h.b
	if err := key.Validate("cache key"); err != nil {
		return "", false, fmt.Errorf("cache get: %w", err)
	}
	kv, err := b.responsesKV(ctx)
	if err != nil {
		return "", false, fmt.Errorf("cache get: %w", err)
	}
	actx, cancel := apiCtx(ctx)
	defer cancel()
	e, err := kv.Get(actx, key.Hex())
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return "", false, nil
	}
	if err != nil {
		return "", false, fmt.Errorf("cache get %s: %w", key, err)
	}
	return string(e.Value()), true, nil
}

// Put stores entry under key in the response cache, replacing
// what was there: the newest reply of a model to a request wins.
func (h *ResponseCache) Put(ctx context.Context, key, entry events.Digest) error {
	b := h.b
	if err := key.Validate("cache key"); err != nil {
		return fmt.Errorf("cache put: %w", err)
	}
	if err := entry.Validate("cache entry"); err != nil {
		return fmt.Errorf("cache put: %w", err)
	}
	kv, err := b.responsesKV(ctx)
	if err != nil {
		return fmt.Errorf("cache put: %w", err)
	}
	actx, cancel := apiCtx(ctx)
	defer cancel()
	if _, err := kv.Put(actx, key.Hex(), []byte(entry)); err != nil {
		return fmt.Errorf("cache put %s: %w", key, err)
	}
	return nil
}
