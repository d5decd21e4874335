package testutil

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// A binary built for a test carries no revision even where the
// environment asks Go to stamp one (a fresh clone does by default).
func TestGoBuildStampsNoRevision(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "stamp")
	cmd := GoBuild(bin, "./testdata/stamp")
	cmd.Env = append(os.Environ(), "GOFLAGS=-buildvcs=true")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	out, err := exec.Command("go", "version", "-m", bin).CombinedOutput()
	if err != nil {
		t.Fatalf("go version -m: %v\n%s", err, out)
	}
	if strings.Contains(string(out), "vcs.revision") {
		t.Errorf("the binary is stamped with a revision:\n%s", out)
	}
}
