package bustest

import (
	"bytes"
	"net"
	"strings"
	"sync"
	"testing"
)

// Freezer is a loopback TCP proxy in front of a NATS server whose
// connections can freeze: every byte in both directions is held, none is
// lost, and nothing tells either side (a process stopped by a debugger, a
// VM paused, a network partition that heals). Thaw lets what was held
// through, in order, as a connection that froze and came back would.
type Freezer struct {
	ln      net.Listener
	mu      sync.Mutex
	frozen  bool
	trigger []byte // freeze right after passing client bytes holding it
	froze   chan struct{}
	conns   []*frozenPipe
	closed  bool
}

// frozenPipe is one direction of one proxied connection.
type frozenPipe struct {
	dst  net.Conn
	held [][]byte
}

// StartFreezer starts a freezer in front of the server at target (a
// host:port or a nats:// URL); it stops when the test ends.
func StartFreezer(tb testing.TB, target string) *Freezer {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	f := &Freezer{ln: ln, froze: make(chan struct{})}
	tb.Cleanup(f.close)
	go f.serve(strings.TrimPrefix(target, "nats://"))
	return f
}

// URL is where clients connect to reach the server through the freezer.
func (f *Freezer) URL() string { return "nats://" + f.ln.Addr().String() }

// Freeze holds every byte from now on, both ways.
func (f *Freezer) Freeze() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.freezeLocked()
}

func (f *Freezer) freezeLocked() {
	if !f.frozen {
		f.frozen = true
		close(f.froze)
	}
}

// FreezeAfter freezes the connections right after the client's bytes that
// hold pattern (a subject, say) were passed to the server: the server gets
// the request, and its answer is held with everything else.
func (f *Freezer) FreezeAfter(pattern string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.trigger = []byte(pattern)
}

// Frozen is closed once the freezer froze.
func (f *Freezer) Frozen() <-chan struct{} {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.froze
}

// Thaw passes what was held, in order, and everything after it.
func (f *Freezer) Thaw() {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, p := range f.conns {
		for _, b := range p.held {
			_, _ = p.dst.Write(b)
		}
		p.held = nil
	}
	f.frozen, f.trigger = false, nil
	f.froze = make(chan struct{})
}

func (f *Freezer) serve(target string) {
	for {
		c, err := f.ln.Accept()
		if err != nil {
			return
		}
		s, err := net.Dial("tcp", target)
		if err != nil {
			_ = c.Close()
			continue
		}
		toServer, toClient := &frozenPipe{dst: s}, &frozenPipe{dst: c}
		f.mu.Lock()
		if f.closed {
			f.mu.Unlock()
			_ = c.Close()
			_ = s.Close()
			return
		}
		f.conns = append(f.conns, toServer, toClient)
		f.mu.Unlock()
		go f.copy(c, toServer, true)
		go f.copy(s, toClient, false)
	}
}

// copy passes what src sends to p's destination, or holds it while
// frozen. The client's bytes that hold the trigger are passed and then
// the freezer freezes, under one lock: the server's answer to them is
// read only after, and so is held.
func (f *Freezer) copy(src net.Conn, p *frozenPipe, fromClient bool) {
	defer func() { _ = src.Close(); _ = p.dst.Close() }()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if err != nil {
			return
		}
		data := bytes.Clone(buf[:n])
		f.mu.Lock()
		if f.frozen {
			p.held = append(p.held, data)
			f.mu.Unlock()
			continue
		}
		_, werr := p.dst.Write(data)
		if fromClient && f.trigger != nil && bytes.Contains(data, f.trigger) {
			f.freezeLocked()
		}
		f.mu.Unlock()
		if werr != nil {
			return
		}
	}
}

func (f *Freezer) close() {
	_ = f.ln.Close()
	f.mu.Lock()
	defer f.mu.Unlock()
	f.closed = true
	for _, p := range f.conns {
		_ = p.dst.Close()
	}
}
