package view

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/factline/factline/bus"
	"github.com/factline/factline/events"
	"github.com/factline/factline/internal/sleep"
	"github.com/factline/factline/ops"
)

// liveFact is the data of one event: the fact, as an operator's line.
type liveFact struct {
	Seq     uint64 `json:"seq"`
	Suite   string `json:"suite"`
	Run     string `json:"run"`
	Kind    string `json:"kind"`
	Summary string `json:"summary"`
}

// events streams the facts of a suite, a run or the whole log as
// Server-Sent Events, each with its stream sequence as the event ID. It
// starts after the sequence in the Last-Event-ID header (the browser sends
// it when it reconnects) or else in the since parameter (the sequence the
// page was rendered at), so a page misses nothing between its render and
// its stream, nor across a reconnect. The stream is an ordered read of
// FACTS; an event is sent once the viewer has folded its fact, so a page
// that reloads its content on the event shows it. When the read fails
// (the NATS server restarted) it reads again from the last event sent.
func (s *Server) events(w http.ResponseWriter, r *http.Request) {
	if s.cfg.Bus == nil {
		http.Error(w, "this viewer reads an export file: nothing is live", http.StatusNotFound)
		return
	}
	q := r.URL.Query()
	suite, run := q.Get("suite"), q.Get("run")
	filter := "fact.>"
	switch {
	case run != "" && suite == "":
		http.Error(w, "events: a run is named within its suite: give suite too", http.StatusBadRequest)
		return
	case suite != "":
		if err := events.ValidateToken("suite", suite); err != nil {
			http.Error(w, "events: "+err.Error(), http.StatusBadRequest)
			return
		}
		filter = events.SuiteFilter(suite)
		if run != "" {
			if err := events.ValidateToken("run", run); err != nil {
				http.Error(w, "events: "+err.Error(), http.StatusBadRequest)
				return
			}
			filter = events.RunFilter(suite, run)
		}
	}
	last, err := startAfter(r)
	if err != nil {
		http.Error(w, "events: "+err.Error(), http.StatusBadRequest)
		return
	}
	flusher, ok := w.(http.Flusher)
	if !ok {
		http.Error(w, "events: the connection cannot stream", http.StatusInternalServerError)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)

	ctx := r.Context()
	var wmu sync.Mutex
	write := func(format string, args ...any) error {
		wmu.Lock()
		defer wmu.Unlock()
		if _, err := fmt.Fprintf(w, format, args...); err != nil {
			return err
		}
		flusher.Flush()
		return nil
	}
	// The browser waits this long before it reconnects.
	if write("retry: 1000\n\n") != nil {
		return
	}
	// The heartbeat stops before the handler returns: a write after it
	// would race the server finishing the response.
	beat, stopBeat := context.WithCancel(ctx)
	beaten := make(chan struct{})
	defer func() { stopBeat(); <-beaten }()
	go func() {
		defer close(beaten)
		t := time.NewTicker(s.cfg.Heartbeat)
		defer t.Stop()
		for {
			select {
			case <-beat.Done():
				return
			case <-t.C:
				_ = write(": alive\n\n")
			}
		}
	}()
	wait := s.cfg.Retry
	for ctx.Err() == nil {
		_, err := s.cfg.Bus.Read(ctx, bus.ReadOptions{Filter: filter, FromSeq: last + 1, Follow: true}, func(raw bus.Raw) error {
			if err := s.WaitThrough(ctx, raw.Seq); err != nil {
				return err
			}
			ev := liveFact{Seq: raw.Seq}
			if f, err := raw.Fact(); err == nil {
				ev.Suite, ev.Run, ev.Kind, ev.Summary = f.Suite, f.Run, string(f.Kind()), ops.Summary(f)
			} else {
				ev.Kind, ev.Summary = "undecodable", err.Error()
			}
			data, _ := json.Marshal(ev)
			if err := write("id: %d\nevent: fact\ndata: %s\n\n", raw.Seq, data); err != nil {
				return err
			}
			last, wait = raw.Seq, s.cfg.Retry
			return nil
		})
		if ctx.Err() != nil {
			return
		}
		s.log.Warn("view: an event stream's read stopped; reading again", "filter", filter, "after", last, "err", err)
		if write(": reading the log again after %d\n\n", last) != nil {
			return
		}
		if sleep.For(ctx, wait) != nil {
			return
		}
		wait = min(2*wait, maxRetry)
	}
}

// startAfter is the sequence an event stream starts after: the
// Last-Event-ID a reconnecting browser sends, else the since parameter,
// else 0 (the start of the log).
func startAfter(r *http.Request) (uint64, error) {
	v := r.Header.Get("Last-Event-ID")
	what := "Last-Event-ID"
	if v == "" {
		v, what = r.URL.Query().Get("since"), "since"
	}
	if v == "" {
		return 0, nil
	}
	n, err := strconv.ParseUint(v, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%s %q is not a stream sequence", what, v)
	}
	return n, nil
}
