package testutil

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// WriteTree writes files (path relative to dir → content) under dir,
// making the directories they need; a path ending in .sh is executable,
// as a case's scripts must be.
func WriteTree(t testing.TB, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		mode := os.FileMode(0o644)
		if strings.HasSuffix(name, ".sh") {
			mode = 0o755
		}
		if err := os.WriteFile(p, []byte(content), mode); err != nil {
			t.Fatal(err)
		}
	}
}
