package tools

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A path the workspace cannot resolve though it stays inside (a symlink
// loop, a file used as a directory) escapes nothing: it is a file system
// error naming the path, not PATH_ESCAPE, which would send the model
// looking for a way out of the root it never took.
func TestUnresolvablePathInsideIsNoEscape(t *testing.T) {
	env, dir := testEnv(t)
	if err := os.Symlink("b", filepath.Join(dir, "a")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("a", filepath.Join(dir, "b")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "f"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	r, _ := NewRegistry(nil)
	for _, c := range []struct{ tool, args, code, says string }{
		{"read_file", `{"path":"a"}`, CodeIO, "symlink"},
		{"list_files", `{"path":"b"}`, CodeIO, "symlink"},
		{"read_file", `{"path":"f/g"}`, CodeNotDirectory, "not a directory"},
	} {
		res := call(t, r, env, c.tool, c.args)
		if res.Err == nil || res.Err.Code != c.code || !strings.Contains(res.Err.Message, c.says) {
			t.Errorf("%s %s: %+v, want %s saying %q", c.tool, c.args, res.Err, c.code, c.says)
		}
	}
}
