// Package bytecache keeps byte slices by content digest, up to a total
// size, dropping the oldest first. What a digest names never changes, so
// an entry is never stale: the bus keeps the blobs it rebuilt from deltas
// in one, the viewer the blobs its pages show.
package bytecache

import (
	"sync"

	"github.com/factline/factline/events"
)

// Cache is safe for concurrent use.
type Cache struct {
	limit   int // bytes kept at most
	largest int // an entry above this is not kept

	mu    sync.Mutex
	size  int
	data  map[events.Digest][]byte
	order []events.Digest // oldest first
}

// New returns a cache of at most limit bytes that keeps no entry larger
// than largest (which a cache of blobs that may each be large keeps
// below limit, so that one entry never drops all the others).
func New(limit, largest int) *Cache {
	return &Cache{limit: limit, largest: min(largest, limit), data: map[events.Digest][]byte{}}
}

// Get returns the bytes kept under d. They are the cache's own: read
// them, never change them (bytes.Clone them to do so).
func (c *Cache) Get(d events.Digest) ([]byte, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	b, ok := c.data[d]
	return b, ok
}

// Put keeps b under d, dropping the oldest entries beyond the limit. The
// cache holds b itself: the caller must not change it afterwards. An
// entry larger than the largest kept, or a digest already kept, changes
// nothing.
func (c *Cache) Put(d events.Digest, b []byte) {
	if len(b) > c.largest {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.data[d]; ok {
		return
	}
	for c.size+len(b) > c.limit && len(c.order) > 0 {
		old := c.order[0]
		c.order = c.order[1:]
		c.size -= len(c.data[old])
		delete(c.data, old)
	}
	c.data[d] = b
	c.order = append(c.order, d)
	c.size += len(b)
}
