package extensions

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strconv"
	"sync"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/factline/factline/secrets"
)

// strayQuote bounds how much of a line that is no JSON-RPC an error
// quotes; strayKept how much of it is kept before redaction.
const (
	strayQuote = 200
	strayKept  = 1024
)

// stdioTransport runs a server over its stdin and stdout, as
// mcp.CommandTransport does, but watches what the server writes: a server
// that prints a banner or a log line on stdout otherwise failed with the
// decoder's words alone ("invalid character 'h' in literal true").
type stdioTransport struct {
	cmd *exec.Cmd
	out *strayWatch
	// grace is how long Close waits for the server to exit once its stdin
	// is closed before killing its process group.
	grace time.Duration
}

// Connect starts the command and speaks newline-delimited JSON-RPC with it.
func (t *stdioTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	stdout, err := t.cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("stdout pipe: %w", err)
	}
	stdin, err := t.cmd.StdinPipe()
	if err != nil {
		return nil, fmt.Errorf("stdin pipe: %w", err)
	}
	if err := t.cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", t.cmd.Path, err)
	}
	t.out.r = stdout
	// The connection is closed by closing stdin, then waiting for the
	// process: stdout is the process's to close.
	return (&mcp.IOTransport{Reader: io.NopCloser(t.out), Writer: &serverStdin{WriteCloser: stdin, cmd: t.cmd, grace: t.grace}}).Connect(ctx)
}

// serverStdin closes a server's session: its stdin first, then (after
// grace) its process group, which it then waits for.
type serverStdin struct {
	io.WriteCloser
	cmd   *exec.Cmd
	grace time.Duration
	once  sync.Once
}

func (s *serverStdin) Close() error {
	err := s.WriteCloser.Close()
	s.once.Do(func() {
		done := make(chan struct{})
		go func() { _ = s.cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(s.grace):
			_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
			<-done
		}
	})
	if err != nil && !errors.Is(err, io.ErrClosedPipe) && !errors.Is(err, syscall.EPIPE) {
		return fmt.Errorf("close the server's stdin: %w", err)
	}
	return nil
}

// strayWatch passes a server's stdout through and keeps the start of its
// first line that cannot be a JSON-RPC message (whose first byte is not
// '{' or '['), which the decoder then fails on.
type strayWatch struct {
	r io.Reader
	// lineStart is true at the start of a line; inStray while the stray
	// line is being kept.
	lineStart, inStray, done bool
	mu                       sync.Mutex
	stray                    []byte
}

func newStrayWatch() *strayWatch { return &strayWatch{lineStart: true} }

func (w *strayWatch) Read(p []byte) (int, error) {
	n, err := w.r.Read(p)
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, b := range p[:n] {
		if w.done {
			break
		}
		switch {
		case w.inStray:
			if b == '\n' || len(w.stray) > strayKept {
				w.done = true
				continue
			}
			w.stray = append(w.stray, b)
		case b == '\n':
			w.lineStart = true
		case w.lineStart && (b == ' ' || b == '\t' || b == '\r'):
		case w.lineStart && b != '{' && b != '[':
			w.inStray = true
			w.stray = append(w.stray, b)
		default:
			w.lineStart = false
		}
	}
	return n, err
}

// explain is what the server wrote that is no JSON-RPC, for an error
// message: "" when it wrote none. It is redacted and cut to strayQuote
// bytes, a secret the cut split held back whole.
func (w *strayWatch) explain(r *secrets.Redactor) string {
	w.mu.Lock()
	stray := string(w.stray)
	w.mu.Unlock()
	if stray == "" {
		return ""
	}
	quote, cut := r.Redact(stray), len(stray) > strayKept
	if len(quote) > strayQuote {
		n := strayQuote
		for n > 0 && !utf8.RuneStart(quote[n]) {
			n--
		}
		quote, cut = quote[:n], true
	}
	if cut {
		// A secret the cut split shows no part of it.
		quote = quote[:len(quote)-r.PartialEnd(quote)] + "…"
	}
	return "the server wrote what is not JSON-RPC on its stdout, which must carry protocol messages only (a log line belongs on stderr): " + strconv.Quote(quote)
}
