package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/factline/factline/bus"
	"github.com/factline/factline/internal/sleep"
)

// attachWait is how long a process waits for the holder of a store to
// serve it: one that has just taken the lock is still starting its server
// (recovering a large store takes a while).
var attachWait = 30 * time.Second

// storeOptions say how a process opens a store.
type storeOptions struct {
	fsync bus.Durability
	// fsyncSet: --fsync was given, so a process that attaches must find
	// the holder running with it.
	fsyncSet bool
	// listen, for 'serve --listen': this process must hold the store, and
	// serves it as the plan says instead of on a private loopback port.
	listen        *listenPlan
	compressFacts bool
}

// storeConn is a process's use of a store directory. One process at a
// time holds the store: it has the lock (storelock.go), runs the store's
// embedded server and serves it on loopback with the store's credential.
// Every other process attaches to that server. When the holder goes away
// (it ended, or was killed) an attached process takes the store over: it
// takes the lock, starts the server on the store the way the one it
// replaces ran (durability, authentication) and reconnects, and so does
// every other attached process, through the record the new holder writes.
// So two servers never open one directory, and nobody is left reading a
// server that no longer writes.
type storeConn struct {
	dir  string
	opts storeOptions
	seed []byte // the store's credential; nil: the server admits every local client
	nc   *nats.Conn
	b    *bus.Bus

	// What serve --listen prints: the credential's file and whether this
	// start made it.
	credPath string
	madeCred bool

	mu       sync.Mutex
	lock     *storeLock
	srv      *bus.Embedded
	unrecord func()
	rec      storeRecord // the server this process uses (its own while it holds the store)
	holder   holder      // who held the store when this process attached
	closed   bool

	wake chan struct{} // the connection dropped
	stop chan struct{} // closed by close
	done chan struct{} // closed when the watch ends
}

// openStore opens a store directory: it takes the store's lock and serves
// the store, or attaches to the process that holds it (waiting up to
// attachWait for a holder that has just taken the lock to serve). Two
// processes that start at the same instant both try the lock; the kernel
// gives it to one, and the other attaches.
func openStore(ctx context.Context, dir string, opts storeOptions) (*storeConn, error) {
	deadline := time.Now().Add(attachWait)
	warned := false
	var lastErr error
	for {
		l, err := lockStore(dir)
		if err != nil {
			return nil, err
		}
		if l != nil {
			s := newStoreConn(dir, opts)
			if err := s.serve(ctx, l); err != nil {
				l.release()
				return nil, err
			}
			return s, nil
		}
		rec, h, ok, err := currentRecord(dir)
		if err != nil {
			return nil, err
		}
		if opts.listen != nil {
			return nil, fmt.Errorf("store %s is held by %s, which runs its server: a second server on the directory would corrupt it. "+
				"Stop that process first (it serves the store at %s), or run serve without --listen to join its server", dir, h, orUnknown(ok, rec.url))
		}
		if ok {
			if opts.fsyncSet && rec.fsync != opts.fsync {
				return nil, usageError{fmt.Sprintf("--fsync %s: store %s is held by %s, whose server runs with fsync: %s. "+
					"Leave --fsync out to join it, or stop that process first", opts.fsync, dir, h, rec.fsync)}
			}
			s := newStoreConn(dir, opts)
			err := s.attach(ctx, rec, h)
			if err == nil {
				return s, nil
			}
			if errors.Is(err, nats.ErrAuthorization) || ctx.Err() != nil {
				return nil, err
			}
			lastErr = err // the holder may have just ended: look again
		}
		if time.Now().After(deadline) {
			msg := fmt.Sprintf("store %s is held by %s, which serves it at no address this process can reach after %v", dir, h, attachWait)
			if lastErr != nil {
				msg += fmt.Sprintf(" (the last try: %v)", lastErr)
			}
			return nil, fmt.Errorf("%s. A factline that holds a store serves it on loopback and records where in %s; "+
				"a process that holds %s without doing so (a backup with flock(1), a factline still starting) keeps every other out until it ends",
				msg, filepath.Join(dir, storeServedFile), filepath.Join(dir, storeLockFile))
		}
		if !warned && time.Until(deadline) < attachWait-time.Second {
			slog.Warn("waiting for the process holding the store to serve it", "store", dir, "holder", h.String(), "for", attachWait)
			warned = true
		}
		if err := sleep.For(ctx, 50*time.Millisecond); err != nil {
			return nil, err
		}
	}
}

func orUnknown(ok bool, s string) string {
	if !ok {
		return "no address yet"
	}
	return s
}

func newStoreConn(dir string, opts storeOptions) *storeConn {
	return &storeConn{dir: dir, opts: opts, wake: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
}

// serve makes this process the store's holder: it has taken the lock, and
// starts the server, connects, and records where others reach it.
func (s *storeConn) serve(ctx context.Context, l *storeLock) error {
	// A record left here was written by a holder that is gone (the lock
	// was free): never send anyone to its address.
	if err := os.Remove(filepath.Join(s.dir, storeServedFile)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("store %s: remove a dead holder's record: %w", s.dir, err)
	}
	plan := listenPlan{addr: "127.0.0.1:-1", loopback: true, auth: true}
	if s.opts.listen != nil {
		plan = *s.opts.listen
	}
	if plan.auth {
		var err error
		if s.credPath, s.seed, s.madeCred, err = storeCredential(s.dir, true); err != nil {
			return err
		}
	}
	srv, err := bus.StartEmbedded(ctx, bus.EmbeddedConfig{StoreDir: s.dir, Listen: plan.addr, ClientSeed: s.seed, Durability: s.opts.fsync})
	if err != nil {
		return err
	}
	s.lock, s.srv = l, srv
	s.rec = storeRecord{url: localURL(srv.Server().Addr()), pid: os.Getpid(), fsync: s.opts.fsync, auth: plan.auth}
	if err := s.connect(ctx); err != nil {
		srv.Shutdown()
		return err
	}
	// Recorded once the streams are made: a process that attaches finds
	// the store set up.
	unrecord, err := writeStoreRecord(s.dir, s.rec)
	if err != nil {
		s.nc.Close()
		srv.Shutdown()
		return err
	}
	s.unrecord = unrecord
	go s.watch()
	return nil
}

// attach connects to the server the holder recorded.
func (s *storeConn) attach(ctx context.Context, rec storeRecord, h holder) error {
	s.rec, s.holder = rec, h
	if rec.auth {
		var err error
		if s.credPath, s.seed, _, err = storeCredential(s.dir, false); err != nil {
			return fmt.Errorf("store %s is held by %s, whose server needs the store's credential: %w", s.dir, h, err)
		}
	}
	if err := s.connect(ctx); err != nil {
		return fmt.Errorf("store %s is held by %s; attach to its server at %s: %w", s.dir, h, rec.url, err)
	}
	go s.watch()
	return nil
}

// connect opens this process's connection to the store's server (its
// own, in-process, while it holds the store; the holder's over loopback
// otherwise) and the bus on it. The connection dials through s (Dial
// below), so that it follows the store from holder to holder.
func (s *storeConn) connect(ctx context.Context) error {
	opts := []nats.Option{
		nats.Name("factline"), nats.SetCustomDialer(s),
		nats.MaxReconnects(-1), nats.ReconnectWait(100 * time.Millisecond),
		nats.DisconnectErrHandler(func(*nats.Conn, error) {
			select {
			case s.wake <- struct{}{}:
			default:
			}
		}),
	}
	if s.seed != nil {
		o, err := bus.ClientAuth(s.seed)
		if err != nil {
			return err
		}
		opts = append(opts, o)
	}
	nc, err := nats.Connect(s.rec.url, opts...)
	if err != nil {
		return err
	}
	b, err := bus.Open(ctx, nc, bus.Config{Logger: slog.Default(), CompressFacts: s.opts.compressFacts})
	if err != nil {
		nc.Close()
		return fmt.Errorf("open store %s: %w", s.dir, err)
	}
	s.nc, s.b = nc, b
	return nil
}

// Dial is the connection's dialer (nats.CustomDialer): this process's own
// server in-process while it holds the store, else whichever server the
// store's holder records now.
func (s *storeConn) Dial(network, _ string) (net.Conn, error) {
	s.mu.Lock()
	srv, closed := s.srv, s.closed
	s.mu.Unlock()
	switch {
	case closed:
		return nil, fmt.Errorf("store %s: closed", s.dir)
	case srv != nil:
		return srv.Server().InProcessConn()
	}
	rec, _, ok, err := currentRecord(s.dir)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, fmt.Errorf("store %s: no process serves it now", s.dir)
	}
	u, err := url.Parse(rec.url)
	if err != nil {
		return nil, fmt.Errorf("store %s: record %q: %w", s.dir, rec.url, err)
	}
	return net.DialTimeout(network, u.Host, 2*time.Second)
}

// watch takes the store over when the connection drops and the lock is
// free: the holder is gone. Until then (another attached process was
// quicker, or the holder is restarting) the connection reconnects to
// whoever holds the store.
func (s *storeConn) watch() {
	defer close(s.done)
	for {
		select {
		case <-s.stop:
			return
		case <-s.wake:
		}
		s.mu.Lock()
		held := s.srv != nil
		s.mu.Unlock()
		if held {
			continue // our own server stopping: close is under way
		}
		slog.Warn("the store's server went away; following the store to its next holder", "store", s.dir, "holder", s.holder.String(), "url", s.rec.url)
		for !s.nc.IsConnected() && !s.nc.IsClosed() {
			took, err := s.takeOver()
			if err != nil {
				slog.Warn("could not take the store over", "store", s.dir, "err", err)
			}
			if took {
				break
			}
			select {
			case <-s.stop:
				return
			case <-time.After(100 * time.Millisecond):
			}
		}
	}
}

// takeOver makes this process the store's holder if the lock is free,
// serving the store as the server it replaces did (durability and
// authentication; always on a private loopback port).
func (s *storeConn) takeOver() (bool, error) {
	l, err := lockStore(s.dir)
	if err != nil || l == nil {
		return false, err
	}
	if err := os.Remove(filepath.Join(s.dir, storeServedFile)); err != nil && !errors.Is(err, os.ErrNotExist) {
		l.release()
		return false, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	srv, err := bus.StartEmbedded(ctx, bus.EmbeddedConfig{StoreDir: s.dir, Listen: "127.0.0.1:-1", ClientSeed: s.seed, Durability: s.rec.fsync})
	if err != nil {
		l.release()
		return false, err
	}
	rec := storeRecord{url: localURL(srv.Server().Addr()), pid: os.Getpid(), fsync: s.rec.fsync, auth: s.seed != nil}
	unrecord, err := writeStoreRecord(s.dir, rec)
	if err != nil {
		srv.Shutdown()
		l.release()
		return false, err
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		unrecord()
		srv.Shutdown()
		l.release()
		return false, nil
	}
	s.lock, s.srv, s.unrecord, s.rec = l, srv, unrecord, rec
	s.mu.Unlock()
	slog.Warn("took the store over: this process now holds it and serves it", "store", s.dir, "pid", os.Getpid(), "url", rec.url, "fsync", rec.fsync)
	return true, nil
}

// holds reports whether this process holds the store now.
func (s *storeConn) holds() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.srv != nil
}

// close ends this process's use of the store. A holder stops its server
// and then releases the lock, so a process attached to it takes the store
// over only once no server has the files open.
func (s *storeConn) close() {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	close(s.stop)
	s.nc.Close()
	<-s.done
	s.mu.Lock()
	srv, l, unrecord := s.srv, s.lock, s.unrecord
	s.mu.Unlock()
	if unrecord != nil {
		unrecord()
	}
	if srv != nil {
		srv.Shutdown()
	}
	if l != nil {
		l.release()
	}
}

// describe says where the log is and how durably, for a command's first
// line: the server this process runs, or the holder's it attached to.
func (s *storeConn) describe() string {
	dir := s.dir
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.srv != nil {
		return fmt.Sprintf("embedded JetStream in %s (fsync: %s)", dir, s.rec.fsync)
	}
	return fmt.Sprintf("store %s is held by %s: attached to its server at %s (fsync: %s)", dir, s.holder, s.rec.url, s.rec.fsync)
}
