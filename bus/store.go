package bus

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

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"

	"github.com/factline/factline/internal/sleep"
)

// defaultAttachWait is how long a process waits for the holder of a store
// to serve it: one that has just taken the lock is still starting its
// server (recovering a large store takes a while).
const defaultAttachWait = 30 * time.Second

// StoreOptions say how OpenEmbedded opens a store directory.
type StoreOptions struct {
	// Durability of the server this process starts when it holds the
	// store (default SyncAlways).
	Durability Durability
	// RequireDurability: a process that attaches must find the holder
	// running with Durability (the operator asked for it).
	RequireDurability bool
	// Listen, when set, says this process must hold the store, and serves
	// it as Listen says instead of on a private loopback port.
	Listen *StoreListen
	// CompressFacts creates FACTS compressed where Open creates it.
	CompressFacts bool
	// AttachWait bounds the wait for a holder that has just taken the lock
	// to serve the store (default 30 s), or, with Listen, for a lock held
	// without a server to be let go.
	AttachWait time.Duration
	// Logger receives the store's warnings (default slog.Default()).
	Logger *slog.Logger
	// ServerLog receives the log of the server this process starts on the
	// store, as its holder or on taking it over (nil: silenced); a watch
	// for a full disk reads it.
	ServerLog server.Logger
}

// StoreListen is how the holder of a store serves it to other processes.
type StoreListen struct {
	Addr string // host:port to bind (port -1: a free one)
	Auth bool   // clients must hold the store's credential
}

// Store is a process's use of a store directory. One process at a time
// holds the store: it has the lock (storelock.go), runs the store's
// embedded server and serves it on loopback with the store's credential.
// Every other process attaches to that server. When the holder goes away
// (it ended, or was killed) an attached process takes the store over: it
// takes the lock, starts the server on the store the way the one it
// replaces ran (durability, authentication) and reconnects, and so does
// every other attached process, through the record the new holder writes.
// So two servers never open one directory, and nobody is left reading a
// server that no longer writes.
type Store struct {
	dir  string
	opts StoreOptions
	log  *slog.Logger
	seed []byte // the store's credential; nil: the server admits every local client
	nc   *nats.Conn
	b    *Bus

	// What a listening holder prints: the credential's file and whether
	// this start made it.
	credPath string
	madeCred bool

	mu       sync.Mutex
	lock     *storeLock
	srv      *Embedded
	unrecord func()
	rec      storeRecord // the server this process uses (its own while it holds the store)
	holder   holder      // who held the store when this process attached
	closed   bool

	wake chan struct{} // the connection dropped
	stop chan struct{} // closed by Close
	done chan struct{} // closed when the watch ends
}

// StoreConflict says why a store another process holds refuses an open.
type StoreConflict int

const (
	// ConflictListen: this process was to serve the store, and another
	// already does.
	ConflictListen StoreConflict = iota + 1
	// ConflictDurability: the holder's server runs with another
	// durability than the one required.
	ConflictDurability
)

// StoreHeldError is an open refused because another process holds the
// store in a way this open cannot share.
type StoreHeldError struct {
	Dir      string
	Conflict StoreConflict
	// Holder names the process holding the store ("process 42 (factline
	// serve ...)", "another process").
	Holder string
	// URL is where the holder serves the store; empty when it does not
	// yet, as far as this process can tell.
	URL string
	// Durability is the holder's server's; Want the one required.
	Durability, Want Durability
}

func (e *StoreHeldError) Error() string {
	if e.Conflict == ConflictDurability {
		return fmt.Sprintf("store %s is held by %s, whose server runs with fsync: %s, not %s", e.Dir, e.Holder, e.Durability, e.Want)
	}
	return fmt.Sprintf("store %s is held by %s, which runs its server: a second server on the directory would corrupt it", e.Dir, e.Holder)
}

// OpenEmbedded opens a store directory: it takes the store's lock and
// serves the store from an embedded server, or attaches to the process
// that holds it (waiting up to AttachWait for a holder that has just taken
// the lock to serve). Two processes that start at the same instant both
// try the lock; the kernel gives it to one, and the other attaches. A
// store held in a way this open cannot share is a *StoreHeldError.
func OpenEmbedded(ctx context.Context, dir string, opts StoreOptions) (*Store, error) {
	if opts.Durability == "" {
		opts.Durability = SyncAlways
	}
	if opts.AttachWait <= 0 {
		opts.AttachWait = defaultAttachWait
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	attachWait := opts.AttachWait
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
		// An open that is to serve the store is refused by a holder that
		// serves it; a lock without a server yet is waited for, as below:
		// its holder may be starting, or be a child forked the instant
		// before the last holder let go (it keeps the lock until it execs).
		if opts.Listen != nil && (ok || time.Now().After(deadline)) {
			e := &StoreHeldError{Dir: dir, Conflict: ConflictListen, Holder: h.String(), Want: opts.Durability}
			if ok {
				e.URL, e.Durability = rec.url, rec.fsync
			}
			return nil, e
		}
		if ok && opts.Listen == nil {
			if opts.RequireDurability && rec.fsync != opts.Durability {
				return nil, &StoreHeldError{Dir: dir, Conflict: ConflictDurability, Holder: h.String(), URL: rec.url, Durability: rec.fsync, Want: opts.Durability}
			}
			s := newStoreConn(dir, opts)
			err := s.attach(ctx, rec, h)
			if err == nil {
				return s, nil
			}
			if errors.Is(err, nats.ErrAuthorization) || errors.As(err, new(*credentialFileError)) || ctx.Err() != nil {
				return nil, err
			}
			lastErr = err // the holder may have just ended: look again
		}
		if time.Now().After(deadline) {
			if h.pid != 0 && processStopped(h.pid) {
				// SIGSTOP, a debugger, a frozen container: it holds the
				// lock and answers nobody until it runs again.
				return nil, fmt.Errorf("store %s is held by %s, which is stopped (SIGSTOP, a debugger, a frozen container): "+
					"it keeps the store and serves nobody until it runs again. Continue it (kill -CONT %d) or end it, then try again",
					dir, h, h.pid)
			}
			msg := fmt.Sprintf("store %s is held by %s, which serves it at no address this process can reach after %v", dir, h, attachWait)
			if lastErr != nil {
				msg += fmt.Sprintf(" (the last try: %v)", lastErr)
			}
			return nil, fmt.Errorf("%s. A factline that holds a store serves it on loopback and records where in %s; "+
				"a process that holds %s without doing so (a backup with flock(1), a factline still starting) keeps every other out until it ends",
				msg, filepath.Join(dir, StoreRecordFile), filepath.Join(dir, StoreLockFile))
		}
		if !warned && time.Until(deadline) < attachWait-time.Second {
			opts.Logger.Warn("waiting for the process holding the store to serve it", "store", dir, "holder", h.String(), "for", attachWait)
			warned = true
		}
		if err := sleep.For(ctx, 50*time.Millisecond); err != nil {
			return nil, err
		}
	}
}

func newStoreConn(dir string, opts StoreOptions) *Store {
	return &Store{dir: dir, opts: opts, log: opts.Logger, wake: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
}

// serve makes this process the store's holder: it has taken the lock, and
// starts the server, connects, and records where others reach it.
func (s *Store) serve(ctx context.Context, l *storeLock) error {
	// A record left here was written by a holder that is gone (the lock
	// was free): never send anyone to its address.
	if err := os.Remove(filepath.Join(s.dir, StoreRecordFile)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("store %s: remove a dead holder's record: %w", s.dir, err)
	}
	plan := StoreListen{Addr: "127.0.0.1:-1", Auth: true}
	if s.opts.Listen != nil {
		plan = *s.opts.Listen
	}
	if plan.Auth {
		var err error
		if s.credPath, s.seed, s.madeCred, err = storeCredential(s.dir, true); err != nil {
			return err
		}
	}
	srv, err := StartEmbedded(ctx, EmbeddedConfig{StoreDir: s.dir, Listen: plan.Addr, ClientSeed: s.seed, Durability: s.opts.Durability, Logger: s.opts.ServerLog})
	if err != nil {
		return err
	}
	s.lock, s.srv = l, srv
	s.rec = storeRecord{url: localURL(srv.Server().Addr()), pid: os.Getpid(), fsync: s.opts.Durability, auth: plan.Auth}
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
	go s.keepRecord()
	return nil
}

// recordCheck is how often a holder checks that its record is still in
// the store directory.
const recordCheck = time.Second

// keepRecord writes the holder's record again whenever it finds it
// removed or changed (a cleanup of files that look stale, a hand edit),
// until the store is closed: without it no other process could reach
// the server, neither a new open nor an attached process reconnecting,
// for as long as this process held the store. So it locks the lock file
// again when the one at its path is no longer the one it locked.
func (s *Store) keepRecord() {
	tick := time.NewTicker(recordCheck)
	defer tick.Stop()
	// Each failure is said once while it lasts, not every second.
	lockWarned, recordWarned := false, false
	for {
		select {
		case <-s.stop:
			return
		case <-tick.C:
		}
		// Under the lock: Close marks the store closed before it removes
		// the record, so a record written here is never left behind it.
		s.mu.Lock()
		if s.closed || s.srv == nil {
			s.mu.Unlock()
			return
		}
		relocked, lerr := s.lock.relock(s.dir)
		rec := s.rec
		got, ok, err := readStoreRecord(s.dir)
		lockPath := filepath.Join(s.dir, StoreLockFile)
		switch {
		case lerr != nil && !lockWarned:
			lockWarned = true
			s.log.Warn("the store's lock file was removed or replaced, and could not be locked again: a backup holding it with flock(1) would not wait for this process", "lock", lockPath, "err", lerr)
		case relocked:
			lockWarned = false
			s.log.Warn("the store's lock file was removed or replaced while this process holds the store: locked again", "lock", lockPath)
		case lerr == nil:
			lockWarned = false
		}
		if err == nil && ok && got == rec {
			s.mu.Unlock()
			recordWarned = false
			continue
		}
		_, werr := writeStoreRecord(s.dir, rec)
		s.mu.Unlock()
		path := filepath.Join(s.dir, StoreRecordFile)
		if werr != nil {
			if recordWarned {
				continue
			}
			recordWarned = true
			s.log.Warn("the store's record was removed or changed, and could not be written again: other processes cannot reach this one's server", "record", path, "err", werr)
			continue
		}
		recordWarned = false
		s.log.Warn("the store's record was removed or changed while this process holds the store: written again", "record", path, "url", rec.url)
	}
}

// attach connects to the server the holder recorded.
func (s *Store) attach(ctx context.Context, rec storeRecord, h holder) error {
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
func (s *Store) connect(ctx context.Context) error {
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
		o, err := ClientAuth(s.seed)
		if err != nil {
			return err
		}
		opts = append(opts, o)
	}
	nc, err := nats.Connect(s.rec.url, opts...)
	if err != nil {
		return err
	}
	b, err := Open(ctx, nc, Config{Logger: s.log, CompressFacts: s.opts.CompressFacts})
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
func (s *Store) Dial(network, _ string) (net.Conn, error) {
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
func (s *Store) watch() {
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
		s.log.Warn("the store's server went away; following the store to its next holder", "store", s.dir, "holder", s.holder.String(), "url", s.rec.url)
		for !s.nc.IsConnected() && !s.nc.IsClosed() {
			took, err := s.takeOver()
			if err != nil {
				s.log.Warn("could not take the store over", "store", s.dir, "err", err)
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
func (s *Store) takeOver() (bool, error) {
	l, err := lockStore(s.dir)
	if err != nil || l == nil {
		return false, err
	}
	if err := os.Remove(filepath.Join(s.dir, StoreRecordFile)); err != nil && !errors.Is(err, os.ErrNotExist) {
		l.release()
		return false, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	srv, err := StartEmbedded(ctx, EmbeddedConfig{StoreDir: s.dir, Listen: "127.0.0.1:-1", ClientSeed: s.seed, Durability: s.rec.fsync, Logger: s.opts.ServerLog})
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
	go s.keepRecord()
	s.log.Warn("took the store over: this process now holds it and serves it", "store", s.dir, "pid", os.Getpid(), "url", rec.url, "fsync", rec.fsync)
	return true, nil
}

// Bus is the bus on the store's server; it follows the store from holder
// to holder.
func (s *Store) Bus() *Bus { return s.b }

// Holds reports whether this process holds the store now.
func (s *Store) Holds() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.srv != nil
}

// Close ends this process's use of the store. A holder stops its server
// and then releases the lock, so a process attached to it takes the store
// over only once no server has the files open.
func (s *Store) Close() {
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

// Describe says where the log is and how durably, for a command's first
// line: the server this process runs, or the holder's it attached to.
func (s *Store) Describe() string {
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

// Served says how a holder serves the store to other processes: the
// address its server listens on, the URL processes on this machine reach
// it at, and the store's credential file (empty when clients need none)
// with whether this open made it. ok is false when this process does not
// hold the store.
func (s *Store) Served() (addr net.Addr, localURL, credPath string, madeCred, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.srv == nil {
		return nil, "", "", false, false
	}
	return s.srv.Server().Addr(), s.rec.url, s.credPath, s.madeCred, true
}
