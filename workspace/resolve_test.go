package workspace_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/factline/factline/workspace"
)

func TestResolve(t *testing.T) {
	ctx, b := ctxFor(t), store(t)
	base := t.TempDir()
	root := filepath.Join(base, "root")
	outside := filepath.Join(base, "outside")
	put(t, outside, "secret.txt", "secret\n", 0o600)
	put(t, root, "a/b/c.txt", "c\n", 0o644)
	put(t, root, "a/file.txt", "f\n", 0o644)
	link(t, root, "in", "a/b")                                      // relative, inside
	link(t, root, "abs_in", filepath.Join(root, "a"))               // absolute, inside
	link(t, root, "a/sib", "../a/b")                                // climbs, stays inside
	link(t, root, "out_dir", outside)                               // a directory outside
	link(t, root, "out_rel", "../outside")                          // relative, outside
	link(t, root, "out_file", filepath.Join(outside, "secret.txt")) // a file outside
	link(t, root, "a/up", "../..")                                  // climbs out
	link(t, root, "via_up", "a/up/outside")                         // through a link that climbs out
	link(t, root, "dangling_out", "/nonexistent/x")                 // dangling, outside
	link(t, root, "dangling_in", "a/not-yet")                       // dangling, inside
	link(t, root, "loop1", "loop2")
	link(t, root, "loop2", "loop1")
	w, err := workspace.Open(ctx, b.Blobs(), root, workspace.Options{})
	if err != nil {
		t.Fatal(err)
	}
	r := w.Root()
	in := func(rel string) string { return filepath.Join(r, filepath.FromSlash(rel)) }

	accept := []struct{ path, want string }{
		{"a/b/c.txt", in("a/b/c.txt")},
		{"a/b/new.txt", in("a/b/new.txt")},                         // not yet existing, in an existing dir
		{"a/newdir/deeper/new.txt", in("a/newdir/deeper/new.txt")}, // nearest existing parent is a
		{"in/c.txt", in("a/b/c.txt")},
		{"in", in("a/b")},
		{"abs_in/file.txt", in("a/file.txt")},
		{"a/sib/c.txt", in("a/b/c.txt")},
		{"in/../file.txt", in("a/file.txt")}, // ".." after a symlink is taken from its target, as the kernel does
		{"a/../a/file.txt", in("a/file.txt")},
		{"./a//b/", in("a/b")},
		{"new/../a/file.txt", in("a/file.txt")},
		{"dangling_in", in("a/not-yet")},
		{"", r},
		{".", r},
		{filepath.Join(r, "a/file.txt"), in("a/file.txt")}, // absolute inside the root
		{r, r},
	}
	for _, tc := range accept {
		got, err := w.Resolve(tc.path)
		if err != nil {
			t.Errorf("Resolve(%q): %v", tc.path, err)
			continue
		}
		if got != tc.want {
			t.Errorf("Resolve(%q) = %q, want %q", tc.path, got, tc.want)
		}
	}

	refuse := []struct {
		path     string
		sentinel error
	}{
		{"../x", workspace.ErrEscape},
		{"/etc/passwd", workspace.ErrEscape},
		{"a/../../x", workspace.ErrEscape},
		{"a/b/../../../root/a", workspace.ErrEscape},
		{"out_dir/secret.txt", workspace.ErrEscape}, // a symlinked directory outside
		{"out_dir/new.txt", workspace.ErrEscape},
		{"out_dir", workspace.ErrEscape},
		{"out_file", workspace.ErrEscape}, // a symlinked file outside
		{"out_rel/secret.txt", workspace.ErrEscape},
		{"a/up/outside/secret.txt", workspace.ErrEscape},
		{"via_up/secret.txt", workspace.ErrEscape},
		{"dangling_out", workspace.ErrEscape},
		{filepath.Join(r, "../outside/secret.txt"), workspace.ErrEscape}, // absolute, climbing out
		{outside, workspace.ErrEscape},
		{"loop1", workspace.ErrInvalidPath},
		{"a/file.txt/x", workspace.ErrInvalidPath},
		{"a/file.txt/..", workspace.ErrInvalidPath},
		{"a\x00b", workspace.ErrInvalidPath},
	}
	for _, tc := range refuse {
		got, err := w.Resolve(tc.path)
		if !errors.Is(err, tc.sentinel) {
			t.Errorf("Resolve(%q) = %q, %v; want %v", tc.path, got, err, tc.sentinel)
			continue
		}
		var pe *workspace.PathError
		if !errors.As(err, &pe) || pe.Path != tc.path || pe.Reason == "" {
			t.Errorf("Resolve(%q): error %#v is not a *PathError naming the path", tc.path, err)
		}
	}

	// Resolve reads, never writes: nothing new appeared anywhere.
	if _, err := os.Lstat(in("a/newdir")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Resolve created a/newdir")
	}
}

func TestResolveWithoutWorkspace(t *testing.T) {
	base := t.TempDir()
	put(t, base, "real/a.txt", "a\n", 0o644)
	link(t, base, "alias", "real")
	got, err := workspace.Resolve(filepath.Join(base, "alias"), "a.txt")
	if err != nil {
		t.Fatal(err)
	}
	want, _ := filepath.EvalSymlinks(filepath.Join(base, "real", "a.txt"))
	if got != want {
		t.Errorf("Resolve = %q, want %q", got, want)
	}
	if _, err := workspace.Resolve(filepath.Join(base, "alias"), "../real/a.txt"); !errors.Is(err, workspace.ErrEscape) {
		t.Errorf("err = %v, want ErrEscape", err)
	}
	if _, err := workspace.Resolve(filepath.Join(base, "missing"), "a.txt"); err == nil {
		t.Errorf("resolved against a missing root")
	}
}
