package view

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
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

// errNoBlobs says the viewer reads an export written without blobs
// (version 2 or older, or export --no-blobs).
var errNoBlobs = errors.New("an export file holds facts only: the blob is in the store it was exported from")

// blob returns the bytes named by d, from the cache, the store or the
// export file.
func (s *Server) blob(ctx context.Context, d events.Digest) ([]byte, error) {
	if b, ok := s.blobs.Get(d); ok {
		return b, nil
	}
	if s.cfg.Bus == nil {
		return s.fileBlob(d)
	}
	ctx, cancel := context.WithTimeout(ctx, blobWait)
	defer cancel()
	b, err := s.cfg.Bus.Blobs().Get(ctx, d)
	if err != nil {
		return nil, err
	}
	s.blobs.Put(d, b)
	return b, nil
}

// fileBlob reads the blob d names from the export file, where Load found
// it.
func (s *Server) fileBlob(d events.Digest) ([]byte, error) {
	s.mu.Lock()
	at, ok := s.fileBlobs[d]
	version := s.fileVersion
	s.mu.Unlock()
	if version < 3 {
		return nil, errNoBlobs
	}
	if !ok {
		return nil, fmt.Errorf("the export file holds no blob %s (its store held none when it was exported): %w", d, bus.ErrBlobNotFound)
	}
	f, err := os.Open(s.cfg.File)
	if err != nil {
		return nil, fmt.Errorf("blob %s: %w", d, err)
	}
	defer f.Close()
	b, err := bus.ReadExportBlob(f, at)
	if err != nil {
		return nil, err
	}
	s.blobs.Put(d, b)
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
	case errors.Is(err, bus.ErrBlobIncomplete):
		// The name is stored, its bytes are not: only a put of them
		// mends it, so the page says which, not "no such blob".
		s.notFound(w, r, fmt.Sprintf("the store names blob %s but its bytes are missing (a put that lost its answer left its name; a put of the same bytes mends it): %v", d, err))
		return
	case errors.Is(err, bus.ErrBlobNotFound) && s.cfg.Bus == nil:
		s.notFound(w, r, err.Error())
		return
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
