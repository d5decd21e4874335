package extensions

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/factline/factline/events"
	"github.com/factline/factline/secrets"
	"github.com/factline/factline/services/runner/tools"
	"github.com/factline/factline/version"
)

// maxTools bounds how many tools one server may list before the runner
// stops reading: a server cannot make the runner loop forever.
const maxTools = 1000

// ReasonFailed prefixes the run.ended reason of a run whose admitted
// extension did not start or answer: "extension_failed: <name>: <detail>".
const ReasonFailed = "extension_failed"

// StartError is an admitted extension that did not come up: its process
// failed to start, the session did not initialise or the tools could not
// be listed.
type StartError struct {
	Extension string
	Err       error
}

func (e *StartError) Error() string {
	return fmt.Sprintf("%s: %s: %v", ReasonFailed, e.Extension, e.Err)
}

func (e *StartError) Unwrap() error { return e.Err }

// Options say where and how servers run.
type Options struct {
	// Dir is the servers' working directory (the run's workspace root, so
	// that a write-class tool changes what the runner rescans).
	Dir string
	// Environ is the minimal environment servers run with; an entry's env
	// is added to it. Nothing else of the runner's environment reaches a
	// server.
	Environ []string
	// LogDir receives each server's standard error as <name>.stderr.
	LogDir string
	// Logger (default slog.Default()).
	Logger *slog.Logger
	// Secrets are the run's secrets: what a server wrote and the runner
	// quotes (the end of its stderr) shows none of them, whole or in part.
	Secrets *secrets.Redactor
}

// Set is the extension servers of one run. Stop ends them.
type Set struct {
	servers []*server
	stop    sync.Once
}

type server struct {
	entry   Entry
	cmd     *exec.Cmd
	session *mcp.ClientSession
	stderr  *os.File
	secrets *secrets.Redactor
	// stdout watches what the server writes for what is no JSON-RPC.
	stdout *strayWatch
	record events.Extension
	tools  []tools.Tool
}

// Start starts each admitted extension as its own process group, over the
// stdio transport, and lists its tools. Each executable is checked against
// its pin again right before it starts (a *Rejection if it changed since
// admission). On any failure the servers already started are stopped.
func Start(ctx context.Context, entries []Entry, o Options) (*Set, error) {
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	s := &Set{}
	for _, e := range entries {
		srv, err := start(ctx, e, o)
		if err != nil {
			s.Stop()
			return nil, err
		}
		s.servers = append(s.servers, srv)
	}
	return s, nil
}

func start(ctx context.Context, e Entry, o Options) (*server, error) {
	if err := Verify(e); err != nil {
		return nil, err
	}
	srv := &server{entry: e, secrets: o.Secrets, stdout: newStrayWatch()}
	cmd := exec.Command(e.Command, e.Args...)
	cmd.Dir = o.Dir
	cmd.Env = slices.Clone(o.Environ)
	for k, v := range e.Env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	// Its own process group, so that Stop kills whatever it spawned too.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if o.LogDir != "" {
		f, err := os.Create(filepath.Join(o.LogDir, e.Name+".stderr"))
		if err != nil {
			return nil, &StartError{e.Name, err}
		}
		// A file, not a pipe: nothing waits on a reader when the server
		// dies.
		cmd.Stderr, srv.stderr = f, f
	}
	srv.cmd = cmd
	client := mcp.NewClient(&mcp.Implementation{Name: "factline", Version: version.Current().Version}, nil)
	sctx, cancel := context.WithTimeout(ctx, e.StartTimeout.Std())
	defer cancel()
	session, err := client.Connect(sctx, &stdioTransport{cmd: cmd, out: srv.stdout, grace: time.Second}, nil)
	if err != nil {
		srv.kill()
		if stray := srv.stdout.explain(srv.secrets); stray != "" {
			// The decoder's error says only which character it choked on.
			return nil, &StartError{e.Name, fmt.Errorf("start and initialise: %s%s", stray, srv.stderrTail())}
		}
		return nil, &StartError{e.Name, fmt.Errorf("start and initialise: %w%s", err, srv.stderrTail())}
	}
	srv.session = session
	init := session.InitializeResult()
	srv.record = events.Extension{Name: e.Name, Command: e.Command, Args: e.Args, Executable: e.Digest}
	if init != nil {
		srv.record.Protocol = init.ProtocolVersion
		if init.ServerInfo != nil {
			srv.record.Server, srv.record.Version = init.ServerInfo.Name, init.ServerInfo.Version
		}
	}
	offered := map[string]*mcp.Tool{}
	n := 0
	for t, err := range session.Tools(sctx, nil) {
		if err != nil {
			srv.kill()
			return nil, &StartError{e.Name, fmt.Errorf("list tools: %w", err)}
		}
		if n++; n > maxTools {
			srv.kill()
			return nil, &StartError{e.Name, fmt.Errorf("the server lists more than %d tools", maxTools)}
		}
		if _, dup := offered[t.Name]; !dup {
			offered[t.Name] = t
		}
	}
	// The allowlist's order, so that what the model is offered is the same
	// on every runner that takes the run over.
	for _, c := range e.Tools {
		t, ok := offered[c.Name]
		if !ok {
			o.Logger.Warn("an allowlisted tool is not offered by the server", "extension", e.Name, "tool", c.Name)
			continue
		}
		tool, err := newTool(e.Name, c, t, session, srv.stray, srv.stderrTail)
		if err != nil {
			srv.kill()
			return nil, &StartError{e.Name, err}
		}
		srv.tools = append(srv.tools, tool)
		srv.record.Tools = append(srv.record.Tools, events.ExtensionTool{Name: c.Name, Effect: c.Effect, Approval: c.Approval})
	}
	for name := range offered {
		if _, ok := e.capability(name); !ok {
			srv.record.Withheld = append(srv.record.Withheld, name)
		}
	}
	slices.Sort(srv.record.Withheld)
	return srv, nil
}

// stderrTail returns the end of what the server wrote to standard error,
// to explain a failed start or call.
func (s *server) stderrTail() string {
	if s.stderr == nil {
		return ""
	}
	b, err := os.ReadFile(s.stderr.Name())
	if err != nil || len(b) == 0 {
		return ""
	}
	text := tools.Tail(s.secrets.Redact(string(b)), 512, s.secrets.PartialStart)
	return "; its stderr ends: " + strings.TrimSpace(text)
}

// stray is what the server wrote on stdout that is no JSON-RPC, said for
// an error message ("" when it wrote none).
func (s *server) stray() string { return s.stdout.explain(s.secrets) }

// kill ends the server's whole process group and closes the session.
func (s *server) kill() {
	if s.cmd != nil && s.cmd.Process != nil {
		// The group, not the process: children it spawned die with it.
		_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
	}
	if s.session != nil {
		_ = s.session.Close()
	} else if s.cmd != nil && s.cmd.Process != nil {
		_, _ = s.cmd.Process.Wait()
	}
	if s.stderr != nil {
		_ = s.stderr.Close()
	}
}

// Tools returns the tools the model may call, every server's in order.
func (s *Set) Tools() []tools.Tool {
	var out []tools.Tool
	for _, srv := range s.servers {
		out = append(out, srv.tools...)
	}
	return out
}

// Records returns what was admitted, for run.claimed.
func (s *Set) Records() []events.Extension {
	out := make([]events.Extension, 0, len(s.servers))
	for _, srv := range s.servers {
		out = append(out, srv.record)
	}
	return out
}

// PIDs returns the servers' process IDs (each also its process group).
func (s *Set) PIDs() []int {
	var out []int
	for _, srv := range s.servers {
		if srv.cmd != nil && srv.cmd.Process != nil {
			out = append(out, srv.cmd.Process.Pid)
		}
	}
	return out
}

// Stop kills every server with its process group. The run is over (or
// never began): a server gets no grace period in which to act. Stop is
// safe to call more than once and on a nil Set.
func (s *Set) Stop() {
	if s == nil {
		return
	}
	s.stop.Do(func() {
		for _, srv := range s.servers {
			srv.kill()
		}
	})
}
