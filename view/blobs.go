package view

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/factline/factline/bus"
	"github.com/factline/factline/events"
)

// blobCacheBytes bounds the blobs the viewer keeps: a blob never changes
// (it is named by its digest), so a page shown again costs no read.
const blobCacheBytes = 32 << 20

// blobWait bounds one page's wait for a blob: a page with a slow blob
// says so instead of hanging.
const blobWait = 5 * time.Second

// blobCache holds blobs by digest, dropping the oldest past its size.
type blobCache struct {
	mu    sync.Mutex
	limit int
	size  int
	data  map[events.Digest][]byte
	order []events.Digest
}

func newBlobCache(limit int) *blobCache {
	return &blobCache{limit: limit, data: map[events.Digest][]byte{}}
}

func (c *blobCache) get(d events.Digest) ([]byte, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	b, ok := c.data[d]
	return b, ok
}

func (c *blobCache) put(d events.Digest, b []byte) {
	if len(b) > c.limit {
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

// errNoBlobs says the viewer reads an export, which holds facts only.
var errNoBlobs = errors.New("an export file holds facts only: the blob is in the store it was exported from")

// blob returns the bytes named by d, from the cache or the store.
func (s *Server) blob(ctx context.Context, d events.Digest) ([]byte, error) {
	if s.cfg.Bus == nil {
		return nil, errNoBlobs
	}
	if b, ok := s.blobs.get(d); ok {
		return b, nil
	}
	ctx, cancel := context.WithTimeout(ctx, blobWait)
	defer cancel()
	b, err := s.cfg.Bus.GetBlob(ctx, d)
	if err != nil {
		return nil, err
	}
	s.blobs.put(d, b)
	return b, nil
}

// serveBlob serves a blob as plain text: a request the model received, a
// reply or an output too large for its fact.
func (s *Server) serveBlob(w http.ResponseWriter, r *http.Request) {
	d := events.Digest("sha256:" + r.PathValue("digest"))
	if err := d.Validate("digest"); err != nil {
		s.notFound(w, r, fmt.Sprintf("%q names no blob: %v", r.PathValue("digest"), err))
		return
	}
	b, err := s.blob(r.Context(), d)
	switch {
	case errors.Is(err, bus.ErrBlobNotFound):
		s.notFound(w, r, fmt.Sprintf("the store holds no blob %s", d))
		return
	case err != nil:
		http.Error(w, fmt.Sprintf("blob %s: %v", d, err), http.StatusBadGateway)
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	_, _ = w.Write(b)
}
