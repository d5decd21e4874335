package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A bad extension allowlist stops serve before anything starts,
// naming the file, the line and the field.
func TestBadExtensionAllowlist(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	bad := filepath.Join(dir, "ext.yaml")
	if err := os.WriteFile(bad, []byte("extensions:\n  - name: notes\n    command: notes-server\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"serve", "--services", "runner", "--store", t.TempDir(), "--extensions", bad},
		{"serve", "--services", "runner", "--store", t.TempDir(), "--extensions", filepath.Join(dir, "missing.yaml")},
	} {
		code, _, errOut := runCLI(t, args...)
		if code != 2 || !strings.Contains(errOut, "ext") {
			t.Errorf("factline %v: exit %d, stderr %q; want a usage error naming the allowlist", args, code, errOut)
		}
	}
	code, _, errOut := runCLI(t, "serve", "--services", "runner", "--store", t.TempDir(), "--extensions", bad)
	if code != 2 || !strings.Contains(errOut, "ext.yaml:3: extensions[0].command") {
		t.Errorf("exit %d, stderr %q; want the file, line 3 and the field", code, errOut)
	}
}
