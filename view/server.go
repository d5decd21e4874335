// Package view is factline's web viewer: an HTTP shell that serves the
// pages of package view/pages (suites, a suite's report, a run's
// transcript), rebuilt from the log, live. It follows FACTS with an
// ordered read, pushes new facts to open pages with Server-Sent Events,
// and works as well from an export file (without the live part). Pages
// are rendered on the server with html/template; plots are inline SVG;
// the few lines of script that keep a page live are embedded. Nothing is
// fetched from anywhere else, so the viewer works offline.
package view

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/factline/factline/bus"
	"github.com/factline/factline/events"
	"github.com/factline/factline/internal/bytecache"
	"github.com/factline/factline/view/pages"
)

// Config says where the viewer reads the log: a live bus or an export
// file, one of the two.
type Config struct {
	// Bus is the live log: the viewer follows FACTS and serves blobs
	// (the requests the model received).
	Bus *bus.Bus
	// File is an export (factline export): read once; its pages do not
	// change. A version 3 file holds the blobs its facts name; an older
	// one holds none.
	File string
	// Logger receives the viewer's warnings (default slog.Default()).
	Logger *slog.Logger
	// Retry is the first wait before the feed reads again after losing
	// the server (default 200ms, doubling up to 5s).
	Retry time.Duration
	// Hosts are the host names (or addresses) the pages answer to
	// besides this machine's loopback names, 127.0.0.1, localhost and
	// ::1: a request whose Host header names any other is refused with
	// 421, so that a page elsewhere that points its own name at this
	// address (DNS rebinding) cannot read the log. Empty entries are
	// ignored.
	Hosts []string
	// Heartbeat is how often an idle event stream sends a comment, so
	// that a proxy between it and the browser does not close it (default
	// 15s).
	Heartbeat time.Duration
}

// Server serves the pages. Run feeds it; it is an http.Handler.
type Server struct {
	cfg   Config
	log   *slog.Logger
	mux   *http.ServeMux
	pages *templates
	blobs *bytecache.Cache
	hosts map[string]bool // the Host names answered, normalised (hostName)

	mu      sync.Mutex
	model   *pages.Model
	changed chan struct{} // closed, and replaced, when the model moves on
	loaded  bool          // an export file has been read whole
	// fileBlobs are where the blobs of a version 3 export file are in it;
	// fileVersion is the file's format version.
	fileBlobs   map[events.Digest]bus.ExportBlob
	fileVersion int
	feedErr     error // why the live feed is reconnecting, nil when it is not
}

// New returns a viewer of the log cfg names.
func New(cfg Config) (*Server, error) {
	if (cfg.Bus == nil) == (cfg.File == "") {
		return nil, errors.New("view: give a bus or an export file, one of the two")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Retry <= 0 {
		cfg.Retry = 200 * time.Millisecond
	}
	if cfg.Heartbeat <= 0 {
		cfg.Heartbeat = 15 * time.Second
	}
	t, err := loadTemplates()
	if err != nil {
		return nil, err
	}
	s := &Server{cfg: cfg, log: cfg.Logger, pages: t, model: pages.New(), changed: make(chan struct{}), blobs: bytecache.New(blobCacheBytes, blobCacheBytes),
		hosts: allowedHosts(cfg.Hosts)}
	s.routes()
	return s, nil
}

// ServeHTTP implements http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if name := hostName(r.Host); !s.hosts[name] {
		refuseHost(w, r.Host, s.hosts)
		return
	}
	h := w.Header()
	// Every byte the viewer serves is its own: no script, style or image
	// from elsewhere, and facts' text is never taken for markup.
	h.Set("Content-Security-Policy", "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; frame-ancestors 'none'")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	s.mux.ServeHTTP(w, r)
}

// Through is the stream sequence of the newest message the viewer has
// folded.
func (s *Server) Through() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.model.Through()
}

// WaitThrough waits until the viewer has folded the message at sequence
// seq (or ctx ends).
func (s *Server) WaitThrough(ctx context.Context, seq uint64) error {
	for {
		s.mu.Lock()
		through, changed := s.model.Through(), s.changed
		s.mu.Unlock()
		if through >= seq {
			return nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return fmt.Errorf("view: waiting for sequence %d (folded through %d): %w", seq, through, ctx.Err())
		}
	}
}

// apply folds one stored message and wakes whoever waits for it.
func (s *Server) apply(raw bus.Raw) {
	f, err := raw.Fact()
	s.mu.Lock()
	defer s.mu.Unlock()
	if err != nil {
		s.model.Skip(raw.Seq, raw.Subject, err)
		s.log.Warn("view: left out a message that holds no fact of its subject", "seq", raw.Seq, "subject", raw.Subject, "err", err)
	} else {
		s.model.Apply(raw.Seq, f)
	}
	s.feedErr = nil
	close(s.changed)
	s.changed = make(chan struct{})
}

// read runs fn on the model under the lock: page data is built there and
// rendered after, from copies.
func (s *Server) read(fn func(m *pages.Model)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	fn(s.model)
}

// status is what the header says about the feed.
func (s *Server) status() (live bool, reconnecting error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cfg.Bus != nil, s.feedErr
}
