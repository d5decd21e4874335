package bustest

import (
	"bytes"
	"encoding/json"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// Proxy is a loopback TCP proxy between NATS clients and one server, which
// a test uses to cut a client off from the server the way a network does:
//
//   - Hold keeps every connection open and passes no byte either way until
//     Heal, when what was held goes on (a partition TCP rides out: nothing
//     tells either side);
//   - Drop closes every connection and refuses new ones until Heal (a
//     partition the client notices, and reconnects after);
//   - LoseAnswers passes the client's bytes on and throws the server's
//     away until Heal, connections kept: every answer is lost after its
//     request arrived, as when a stream leader dies after taking a request,
//     and nothing tells the client.
//
// It reads the NATS client protocol as it passes, so that a test can act
// at the instant a client's publish reaches the server (OnPublish: hold
// before the server has it, or right after, so that the server stores it
// and its acknowledgement is what is held), and so that an AckLog can
// record every JetStream acknowledgement the server sends.
type Proxy struct {
	tb     testing.TB
	ln     net.Listener
	target string
	acks   *AckLog

	mu      sync.Mutex
	held    chan struct{} // non-nil while held; closed by Heal
	dropped bool
	losing  bool // the server's bytes are thrown away
	closed  bool
	conns   map[*proxyConn]bool
	onPub   func(Publish) (after func())
}

// Publish is a message a client published through a Proxy.
type Publish struct {
	Subject string
	Reply   string
	Header  []byte // the raw NATS header block (empty without headers)
	Data    []byte
}

// MsgID is the publish's Nats-Msg-Id header ("" when it has none).
func (p Publish) MsgID() string {
	for _, line := range strings.Split(string(p.Header), "\r\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && strings.EqualFold(strings.TrimSpace(k), "Nats-Msg-Id") {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// StartProxy starts a proxy on a free loopback port in front of target
// (host:port); it closes when the test ends. acks, when not nil, records
// the acknowledgements of the publishes it tracks.
func StartProxy(tb testing.TB, target string, acks *AckLog) *Proxy {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	p := &Proxy{tb: tb, ln: ln, target: target, acks: acks, conns: map[*proxyConn]bool{}}
	tb.Cleanup(p.Close)
	go p.serve()
	return p
}

// URL is the nats:// URL clients connect to.
func (p *Proxy) URL() string { return "nats://" + p.ln.Addr().String() }

// OnPublish sets fn, called for every message a client publishes through
// the proxy, before it is passed on: fn may Hold the proxy (or any other)
// so that the server never gets the message until Heal, or return a
// function called once the message was passed on, which may hold so that
// the server has the message and its answer is held. fn runs on the
// connection's own goroutine; the connection's bytes wait while it runs.
func (p *Proxy) OnPublish(fn func(Publish) (after func())) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.onPub = fn
}

// Hold stops every byte either way, on every connection, until Heal.
// Connections stay open; new ones are accepted and held too.
func (p *Proxy) Hold() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.held == nil {
		p.held = make(chan struct{})
	}
}

// Drop closes every connection and refuses new ones until Heal.
func (p *Proxy) Drop() {
	p.cut(func() { p.dropped = true })
}

// LoseAnswers throws away every byte the server sends, on every
// connection, until Heal; the client's bytes still reach the server.
func (p *Proxy) LoseAnswers() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.losing = true
}

// Heal ends a Hold (what was held goes on), a Drop (new connections are
// accepted again) or LoseAnswers (the server's next bytes reach the
// client; those thrown away stay lost).
func (p *Proxy) Heal() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.release()
	p.dropped = false
	p.losing = false
}

// Close stops the proxy and closes every connection.
func (p *Proxy) Close() {
	_ = p.ln.Close()
	p.cut(func() {
		p.closed = true
		p.release()
	})
}

// cut changes the proxy's state with set and takes its connections under
// one hold of the lock, so that serve, which checks that state under the
// lock before it adds a connection, adds none that cut misses; then it
// closes them.
func (p *Proxy) cut(set func()) {
	p.mu.Lock()
	set()
	conns := p.conns
	p.conns = map[*proxyConn]bool{}
	p.mu.Unlock()
	for pc := range conns {
		pc.close()
	}
}

// release lets what a Hold held go on; the caller holds p.mu.
func (p *Proxy) release() {
	if p.held != nil {
		close(p.held)
		p.held = nil
	}
}

// proxyConn is one client connection and its connection to the server.
type proxyConn struct {
	c, s net.Conn
	once sync.Once
	done chan struct{}
	// answering is held by toServer from a hooked publish's write until
	// its after func has run, and taken by toClient before it passes the
	// server's bytes on: an answer to that publish cannot slip through
	// before a Hold (or LoseAnswers) placed right after it takes effect.
	answering sync.Mutex
}

func (pc *proxyConn) close() {
	pc.once.Do(func() {
		close(pc.done)
		_ = pc.c.Close()
		_ = pc.s.Close()
	})
}

func (p *Proxy) serve() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		refuse := p.dropped || p.closed
		p.mu.Unlock()
		if refuse {
			_ = c.Close()
			continue
		}
		s, err := net.Dial("tcp", p.target)
		if err != nil {
			// The server is down: the client sees a connection that
			// closes, as it would see a refused one.
			_ = c.Close()
			continue
		}
		pc := &proxyConn{c: c, s: s, done: make(chan struct{})}
		p.mu.Lock()
		if p.dropped || p.closed {
			p.mu.Unlock()
			pc.close()
			continue
		}
		p.conns[pc] = true
		p.mu.Unlock()
		go p.toServer(pc)
		go p.toClient(pc)
	}
}

// pass waits while the proxy holds, then writes b to dst; false when the
// connection is gone.
func (p *Proxy) pass(pc *proxyConn, dst net.Conn, b []byte) bool {
	for {
		p.mu.Lock()
		held := p.held
		p.mu.Unlock()
		if held == nil {
			break
		}
		select {
		case <-held:
		case <-pc.done:
			return false
		}
	}
	if len(b) == 0 {
		return true
	}
	if _, err := dst.Write(b); err != nil {
		pc.close()
		return false
	}
	return true
}

// toServer passes the client's bytes on, message by message where a
// publish must be seen.
func (p *Proxy) toServer(pc *proxyConn) {
	defer pc.close()
	buf := make([]byte, 64<<10)
	var r protoReader
	for {
		n, err := pc.c.Read(buf)
		if n > 0 {
			r.add(buf[:n])
			var out []byte
			for {
				m, ok := r.next()
				if !ok {
					break
				}
				if !m.publish() {
					out = append(out, m.raw...)
					continue
				}
				pub := m.asPublish()
				if p.acks != nil {
					p.acks.expect(pub)
				}
				p.mu.Lock()
				hook := p.onPub
				p.mu.Unlock()
				if hook == nil {
					out = append(out, m.raw...)
					continue
				}
				if !p.pass(pc, pc.s, out) {
					return
				}
				out = nil
				after := hook(pub)
				pc.answering.Lock()
				passed := p.pass(pc, pc.s, m.raw)
				if passed && after != nil {
					after()
				}
				pc.answering.Unlock()
				if !passed {
					return
				}
			}
			out = append(out, r.unparsed()...)
			if !p.pass(pc, pc.s, out) {
				return
			}
			r.consumed()
		}
		if err != nil {
			return
		}
	}
}

// toClient passes the server's bytes on, noting the acknowledgements.
func (p *Proxy) toClient(pc *proxyConn) {
	defer pc.close()
	buf := make([]byte, 64<<10)
	var r protoReader
	for {
		n, err := pc.s.Read(buf)
		if n > 0 {
			pc.answering.Lock() // a hooked publish's after func has run
			pc.answering.Unlock()
			if p.acks != nil {
				r.add(buf[:n])
				for {
					m, ok := r.next()
					if !ok {
						break
					}
					if m.op == "MSG" || m.op == "HMSG" {
						p.acks.answer(m.args[0], m.payload[m.hdr:])
					}
				}
				r.unparsed()
				r.consumed()
			}
			p.mu.Lock()
			losing := p.losing
			p.mu.Unlock()
			if losing {
				continue
			}
			if !p.pass(pc, pc.c, buf[:n]) {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// protoReader splits a NATS protocol byte stream into whole messages: a
// control line, and for PUB, HPUB, MSG and HMSG the payload after it. A
// stream it cannot read (not NATS, or a line past any NATS limit) is
// passed on unread from there on.
type protoReader struct {
	buf    []byte
	off    int  // start of the first message not yet returned
	broken bool // gave up reading: everything is passed on as it comes
}

// protoMsg is one protocol message.
type protoMsg struct {
	raw     []byte // the whole message as it came
	op      string // upper case
	args    []string
	payload []byte // headers and data
	hdr     int    // length of the header block within payload
}

func (m protoMsg) publish() bool { return m.op == "PUB" || m.op == "HPUB" }

func (m protoMsg) asPublish() Publish {
	pub := Publish{Subject: m.args[0], Header: m.payload[:m.hdr], Data: m.payload[m.hdr:]}
	if m.op == "PUB" && len(m.args) == 3 || m.op == "HPUB" && len(m.args) == 4 {
		pub.Reply = m.args[1]
	}
	// The reader's buffer is reused: the publish outlives it.
	pub.Header = bytes.Clone(pub.Header)
	pub.Data = bytes.Clone(pub.Data)
	return pub
}

// maxLine is beyond any control line a NATS server accepts (4 KiB by
// default).
const maxLine = 1 << 20

func (r *protoReader) add(b []byte) { r.buf = append(r.buf, b...) }

// next returns the next whole message, or false when more bytes are
// needed (or the stream cannot be read).
func (r *protoReader) next() (protoMsg, bool) {
	if r.broken {
		return protoMsg{}, false
	}
	rest := r.buf[r.off:]
	end := bytes.Index(rest, []byte("\r\n"))
	if end < 0 {
		if len(rest) > maxLine {
			r.broken = true
		}
		return protoMsg{}, false
	}
	line := string(rest[:end])
	fields := strings.Fields(line)
	if len(fields) == 0 {
		r.off += end + 2
		return protoMsg{raw: rest[:end+2]}, true
	}
	m := protoMsg{op: strings.ToUpper(fields[0]), args: fields[1:]}
	size, hdr := 0, 0
	switch m.op {
	case "PUB", "MSG":
		n, err := lastInt(m.args, 0)
		if err != nil {
			r.broken = true
			return protoMsg{}, false
		}
		size = n
	case "HPUB", "HMSG":
		h, err1 := lastInt(m.args, 1)
		n, err2 := lastInt(m.args, 0)
		if err1 != nil || err2 != nil || h > n {
			r.broken = true
			return protoMsg{}, false
		}
		size, hdr = n, h
	default:
		r.off += end + 2
		m.raw = rest[:end+2]
		return m, true
	}
	total := end + 2 + size + 2
	if len(rest) < total {
		return protoMsg{}, false
	}
	m.raw = rest[:total]
	m.payload = rest[end+2 : end+2+size]
	m.hdr = hdr
	r.off += total
	return m, true
}

// lastInt reads the argument back places from the end as a size.
func lastInt(args []string, back int) (int, error) {
	if len(args) < 2+back {
		return 0, strconv.ErrSyntax
	}
	n, err := strconv.Atoi(args[len(args)-1-back])
	if err == nil && n < 0 {
		err = strconv.ErrRange
	}
	return n, err
}

// unparsed returns what a broken reader holds and has not returned (to be
// passed on as it is); nil while the reader works.
func (r *protoReader) unparsed() []byte {
	if !r.broken {
		return nil
	}
	rest := r.buf[r.off:]
	r.off = len(r.buf)
	return rest
}

// consumed drops the messages returned so far from the buffer.
func (r *protoReader) consumed() {
	n := copy(r.buf, r.buf[r.off:])
	r.buf = r.buf[:n]
	r.off = 0
}

// AckLog records JetStream's acknowledgements of the publishes that went
// through one or more Proxies (a client that reconnects through another
// proxy gets its answers there): each is a message the server stored at
// a sequence it named, which must still be there.
type AckLog struct {
	track func(subject string) bool

	mu      sync.Mutex
	pending map[string]Publish // reply subject → publish awaiting its answer
	acks    []Ack
}

// Ack is a publish and the answer the server gave it: stored in Stream at
// Seq (Duplicate: it was stored before, under the same message ID).
type Ack struct {
	Publish
	Stream    string
	Seq       uint64
	Duplicate bool
}

// NewAckLog records the acknowledgements of publishes on the subjects
// track accepts.
func NewAckLog(track func(subject string) bool) *AckLog {
	return &AckLog{track: track, pending: map[string]Publish{}}
}

func (l *AckLog) expect(pub Publish) {
	if pub.Reply == "" || !l.track(pub.Subject) {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.pending[pub.Reply] = pub
}

// answer notes a message the server sent on subject: when it answers a
// tracked publish with a stored sequence, that is an acknowledgement.
func (l *AckLog) answer(subject string, data []byte) {
	l.mu.Lock()
	defer l.mu.Unlock()
	pub, ok := l.pending[subject]
	if !ok {
		return
	}
	var a struct {
		Stream    string          `json:"stream"`
		Seq       uint64          `json:"seq"`
		Duplicate bool            `json:"duplicate"`
		Error     json.RawMessage `json:"error"`
	}
	if json.Unmarshal(data, &a) != nil {
		return
	}
	delete(l.pending, subject)
	if a.Error != nil || a.Seq == 0 {
		return
	}
	l.acks = append(l.acks, Ack{Publish: pub, Stream: a.Stream, Seq: a.Seq, Duplicate: a.Duplicate})
}

// Acks returns the acknowledgements recorded so far, in the order they
// passed.
func (l *AckLog) Acks() []Ack {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]Ack(nil), l.acks...)
}
