// Package extensionstest builds the test MCP server (extensions/testdata/
// mcpserver) for tests of extensions and of the runner that uses them.
package extensionstest

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/factline/factline/events"
	"github.com/factline/factline/services/runner/extensions"
)

// ServerPackage is the import path of the test MCP server.
const ServerPackage = "github.com/factline/factline/services/runner/extensions/testdata/mcpserver"

// BuildServer builds the test MCP server into a fresh directory and
// returns the executable's path. The go build cache keeps repeated builds
// cheap.
func BuildServer(t testing.TB) string {
	t.Helper()
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go tool is needed to build the test MCP server: %v", err)
	}
	out := filepath.Join(t.TempDir(), "mcpserver")
	cmd := exec.Command(goTool, "build", "-o", out, ServerPackage)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build the test MCP server: %v\n%s", err, b)
	}
	return out
}

// Files are the paths the test server reports through.
type Files struct {
	Marker string // one line (the pid) per start
	Calls  string // one line per call it received
	Sink   string // one line per publish
	Child  string // the pid of a child it left running
}

// NewFiles returns report paths in a fresh directory (none exists yet).
func NewFiles(t testing.TB) Files {
	t.Helper()
	d := t.TempDir()
	return Files{Marker: filepath.Join(d, "marker"), Calls: filepath.Join(d, "calls"),
		Sink: filepath.Join(d, "sink"), Child: filepath.Join(d, "child")}
}

// Args are the server arguments that make it report to f.
func (f Files) Args() []string {
	return []string{"-marker", f.Marker, "-calls", f.Calls, "-sink", f.Sink, "-child", f.Child}
}

// Lines returns the lines of a report file (none when it does not exist).
func Lines(t testing.TB, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	s := strings.TrimSpace(string(b))
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}

// Allowlist pins the test server at bin as "testsrv" with its tools (digest
// "" means the file's own digest), followed by extra allowlist entries in
// YAML. The "missing" tool is allowlisted but not offered; "stall" times out
// after stallTimeout ("" for the default).
func Allowlist(tb testing.TB, bin string, digest events.Digest, f Files, stallTimeout, extra string) *extensions.Allowlist {
	tb.Helper()
	if digest == "" {
		var err error
		if digest, err = extensions.FileDigest(bin); err != nil {
			tb.Fatal(err)
		}
	}
	stall := "{name: stall, effect: read}"
	if stallTimeout != "" {
		stall = fmt.Sprintf("{name: stall, effect: read, timeout: %s}", stallTimeout)
	}
	args, _ := json.Marshal(f.Args())
	l, err := extensions.Parse("ext.yaml", []byte(fmt.Sprintf(`extensions:
  - name: testsrv
    command: %s
    args: %s
    digest: %s
    start_timeout: 60s
    tools:
      - {name: echo, effect: read}
      - {name: add, effect: read}
      - {name: fail, effect: read}
      - {name: publish, effect: external}
      - {name: missing, effect: read}
      - %s
%s`, bin, args, digest, stall, extra)))
	if err != nil {
		tb.Fatal(err)
	}
	return l
}

// WaitGone waits until process pid is gone or a zombie (dead, waiting to
// be reaped by init), failing the test after ten seconds.
func WaitGone(tb testing.TB, pid int) {
	tb.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for syscall.Kill(pid, 0) == nil {
		out, _ := exec.Command("ps", "-o", "stat=", "-p", strconv.Itoa(pid)).Output()
		if strings.HasPrefix(strings.TrimSpace(string(out)), "Z") {
			return
		}
		if time.Now().After(deadline) {
			tb.Fatalf("process %d is still running", pid)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
