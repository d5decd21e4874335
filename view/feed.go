package view

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/factline/factline/bus"
	"github.com/factline/factline/events"
	"github.com/factline/factline/internal/sleep"
)

// maxRetry bounds the wait between two attempts to read the log again.
const maxRetry = 5 * time.Second

// Run feeds the viewer until ctx ends. From a bus it follows FACTS from
// the start, and when the read fails (the server restarted, the
// connection is down) it reads again from the sequence after the last one
// it folded, so nothing is folded twice or missed. From an export file it
// reads the file once, then waits for ctx.
func (s *Server) Run(ctx context.Context) error {
	if s.cfg.File != "" {
		if err := s.Load(ctx); err != nil {
			return err
		}
		<-ctx.Done()
		return nil
	}
	wait := s.cfg.Retry
	for {
		from := s.Through() + 1
		_, err := s.cfg.Bus.Read(ctx, bus.ReadOptions{FromSeq: from, Follow: true}, func(raw bus.Raw) error {
			s.apply(raw)
			wait = s.cfg.Retry
			return nil
		})
		if ctx.Err() != nil {
			return nil
		}
		s.mu.Lock()
		s.feedErr = err
		s.mu.Unlock()
		s.log.Warn("view: the log's feed stopped; reading again", "from", s.Through()+1, "in", wait, "err", err)
		if sleep.For(ctx, wait) != nil {
			return nil
		}
		wait = min(2*wait, maxRetry)
	}
}

// Load folds the log as it is now: an export file whole, or the live
// log up to its newest fact (Run then follows from there). A command calls
// it before it serves, so that its first pages are complete (an empty
// store's page says so only when the store is empty) and a file that is
// no export fails the command instead of serving empty pages.
func (s *Server) Load(ctx context.Context) error {
	if s.Loaded() {
		return nil
	}
	if s.cfg.File == "" {
		from := s.Through() + 1
		if _, err := s.cfg.Bus.Read(ctx, bus.ReadOptions{FromSeq: from}, func(raw bus.Raw) error { s.apply(raw); return nil }); err != nil {
			return fmt.Errorf("read the log from sequence %d: %w", from, err)
		}
		return nil
	}
	f, err := os.Open(s.cfg.File)
	if err != nil {
		return fmt.Errorf("read %s: %w", s.cfg.File, err)
	}
	defer f.Close()
	// A version 3 file's blobs are found where they are, not kept: a
	// page reads one again from the file when it shows it.
	found := map[events.Digest]bus.ExportBlob{}
	version, err := bus.ReadExportWith(f, bus.ExportVisitor{
		Fact: func(raw bus.Raw) error {
			if err := ctx.Err(); err != nil {
				return err
			}
			s.apply(raw)
			return nil
		},
		Blob: func(b bus.ExportBlob) error {
			found[b.Digest] = b
			return nil
		},
	})
	if err != nil {
		return fmt.Errorf("read %s: %w", s.cfg.File, err)
	}
	s.mu.Lock()
	s.loaded = true
	s.fileBlobs, s.fileVersion = found, version
	s.mu.Unlock()
	return nil
}

// Loaded reports whether an export file has been read whole (always false
// for a live viewer, which is never done).
func (s *Server) Loaded() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.loaded
}
