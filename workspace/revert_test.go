package workspace_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/factline/factline/workspace"
)

// A tree past its bounds is a typed error that says which bound and by how
// much, without a caller parsing text.
func TestTooLargeIsTyped(t *testing.T) {
	ctx, b := ctxFor(t), store(t)
	dir := t.TempDir()
	put(t, dir, "a", "12345", 0o644)
	w, err := workspace.Open(ctx, b.Blobs(), dir, workspace.Options{MaxBytes: 8, MaxEntries: 3})
	if err != nil {
		t.Fatal(err)
	}
	put(t, dir, "b", "67890", 0o644)
	_, err = w.Refresh(ctx)
	var le *workspace.LimitError
	if !errors.Is(err, workspace.ErrTooLarge) || !errors.As(err, &le) || le.Bound != workspace.BoundBytes || le.Max != 8 {
		t.Fatalf("err = %#v, want a *LimitError on bytes with max 8", err)
	}
	if got := le.Limit(); got != "at most 8 bytes of file content" {
		t.Errorf("Limit() = %q", got)
	}
	os.Remove(filepath.Join(dir, "b"))
	for _, n := range []string{"c", "d", "e"} {
		put(t, dir, n, "", 0o644)
	}
	_, err = w.Refresh(ctx)
	if !errors.As(err, &le) || le.Bound != workspace.BoundEntries || le.Max != 3 || le.Limit() != "at most 3 entries" {
		t.Fatalf("err = %v, want a *LimitError on entries", err)
	}
}

// Revert puts the directory back to the last scan's tree whatever was done
// to it — files changed, added, removed, retyped, symlinks retargeted,
// modes flipped, directories filled — rewriting only what changed.
func TestRevertRestoresTheLastScannedTree(t *testing.T) {
	ctx, b := ctxFor(t), store(t)
	// With the real clock every file is racy (written in the scan's
	// tick): Revert then hashes what a stat cannot vouch for.
	for name, opts := range map[string]workspace.Options{"trusted stats": later(), "racy stats": {}} {
		t.Run(name, func(t *testing.T) { revertEverything(t, ctx, b.Blobs(), opts) })
	}
}

func revertEverything(t *testing.T, ctx context.Context, b workspace.Blobs, opts workspace.Options) {
	dir := t.TempDir()
	put(t, dir, "keep.txt", "untouched\n", 0o644)
	put(t, dir, "edit.txt", "v1\n", 0o644)
	put(t, dir, "run.sh", "#!/bin/sh\n", 0o755)
	put(t, dir, "d/gone.txt", "deleted later\n", 0o644)
	put(t, dir, "d/e/deep.txt", "deep\n", 0o644)
	link(t, dir, "ln", "keep.txt")
	mkdir(t, dir, "empty")
	mkdir(t, dir, "fill")
	w, err := workspace.Open(ctx, b, dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	want, digest := describe(t, dir), w.Digest()
	keep, err := os.Stat(filepath.Join(dir, "keep.txt"))
	if err != nil {
		t.Fatal(err)
	}

	put(t, dir, "edit.txt", "v2, longer\n", 0o644)
	must(t, os.Chmod(filepath.Join(dir, "run.sh"), 0o644))
	must(t, os.Remove(filepath.Join(dir, "d", "gone.txt")))
	must(t, os.RemoveAll(filepath.Join(dir, "d", "e")))
	put(t, dir, "d/e", "a file where a directory was\n", 0o644)
	put(t, dir, "new/a/b.txt", "added\n", 0o644)
	put(t, dir, "fill/x", "into the empty directory\n", 0o644)
	must(t, os.Remove(filepath.Join(dir, "empty")))
	put(t, dir, "empty", "a file where an empty directory was\n", 0o644)
	must(t, os.Remove(filepath.Join(dir, "ln")))
	link(t, dir, "ln", "/etc/passwd")
	must(t, os.WriteFile(filepath.Join(dir, "big.bin"), make([]byte, 1<<16), 0o644))

	if err := w.Revert(ctx); err != nil {
		t.Fatal(err)
	}
	if got := describe(t, dir); got != want {
		t.Fatalf("after Revert:\n%s\nwant:\n%s", got, want)
	}
	c, err := w.Refresh(ctx)
	if err != nil || c.Changed() || w.Digest() != digest {
		t.Fatalf("a refresh after Revert: %v, changed %v (%s)", err, c.Changed(), paths(c.Paths))
	}
	// What was not touched was not rewritten.
	again, err := os.Stat(filepath.Join(dir, "keep.txt"))
	if err != nil || !os.SameFile(keep, again) || !again.ModTime().Equal(keep.ModTime()) {
		t.Errorf("an untouched file was rewritten")
	}
}

// The use Revert is for: a change that passes the bounds is refused and
// undone, the workspace is back to its last digest and can be sealed, and
// later changes within the bounds are recorded as usual.
func TestRevertUndoesAChangePastTheBounds(t *testing.T) {
	ctx, b := ctxFor(t), store(t)
	dir := t.TempDir()
	put(t, dir, "answer.txt", "3\n", 0o644)
	w, err := workspace.Open(ctx, b.Blobs(), dir, workspace.WithClock(workspace.Options{MaxBytes: 1 << 10},
		func() time.Time { return time.Now().Add(time.Hour) }))
	if err != nil {
		t.Fatal(err)
	}
	before := w.Digest()
	put(t, dir, "answer.txt", "4\n", 0o644)
	put(t, dir, "huge.log", strings.Repeat("x", 4<<10), 0o644)
	if _, err := w.Refresh(ctx); !errors.Is(err, workspace.ErrTooLarge) {
		t.Fatalf("err = %v, want ErrTooLarge", err)
	}
	if err := w.Revert(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "huge.log")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the file past the bound is still there: %v", err)
	}
	if got, _ := os.ReadFile(filepath.Join(dir, "answer.txt")); string(got) != "3\n" {
		t.Fatalf("answer.txt = %q: the whole refused change is undone, not only the part past the bound", got)
	}
	sealed, err := w.Seal(ctx)
	if err != nil || sealed != before {
		t.Fatalf("seal after revert: %s, %v; want %s", sealed, err, before)
	}
	// Another size: the test's clock says every stat is trustworthy, so a
	// same-size rewrite in the revert's timestamp tick would go unseen.
	put(t, dir, "answer.txt", "42\n", 0o644)
	if c, err := w.Refresh(ctx); err != nil || paths(c.Paths) != "modified answer.txt" {
		t.Fatalf("a change within the bounds after a revert: %v %v", paths(c.Paths), err)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
