package bus

import (
	"bytes"
	"sync"

	"github.com/factline/factline/events"
)

// rebuiltCacheBytes bounds the blobs rebuilt from deltas a bus keeps.
const rebuiltCacheBytes = 8 << 20

// rebuiltCache keeps the blobs a bus rebuilt from deltas last, so that a
// reader going through a run's turns in order (the viewer, an audit)
// follows one delta a turn instead of the whole chain each time. Every
// entry was checked against its digest when it was rebuilt.
type rebuiltCache struct {
	mu    sync.Mutex
	data  map[events.Digest][]byte
	order []events.Digest // oldest first
	size  int
}

// get returns a copy of the cached bytes of d: callers may change what
// they get.
func (c *rebuiltCache) get(d events.Digest) ([]byte, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	b, ok := c.data[d]
	return bytes.Clone(b), ok
}

// peek returns the cached bytes of d without copying them, for reading
// only.
func (c *rebuiltCache) peek(d events.Digest) ([]byte, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	b, ok := c.data[d]
	return b, ok
}

// put keeps a copy of b under d, dropping the oldest entries beyond the
// bound.
func (c *rebuiltCache) put(d events.Digest, b []byte) {
	if len(b) > rebuiltCacheBytes/4 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.data == nil {
		c.data = map[events.Digest][]byte{}
	}
	if _, ok := c.data[d]; ok {
		return
	}
	for c.size+len(b) > rebuiltCacheBytes && len(c.order) > 0 {
		old := c.order[0]
		c.order = c.order[1:]
		c.size -= len(c.data[old])
		delete(c.data, old)
	}
	c.data[d] = bytes.Clone(b)
	c.order = append(c.order, d)
	c.size += len(b)
}
