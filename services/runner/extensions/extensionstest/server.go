// Package extensionstest builds the test MCP server (extensions/testdata/
// mcpserver) for tests of extensions and of the runner that uses them.
package extensionstest

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
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
