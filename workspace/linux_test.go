//go:build linux

package workspace_test

import (
	"errors"
	"io/fs"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/factline/factline/workspace"
)

func ctimeOf(fi fs.FileInfo) time.Time {
	st := fi.Sys().(*syscall.Stat_t)
	return time.Unix(st.Ctim.Unix())
}

func TestSpecialFilesAreRefusedUnlessIgnored(t *testing.T) {
	ctx, b := ctxFor(t), store(t)
	root := t.TempDir()
	put(t, root, "a.txt", "a\n", 0o644)
	if err := syscall.Mkfifo(filepath.Join(root, "pipe"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := workspace.Store(ctx, b.Blobs(), root, workspace.Options{})
	var pe *workspace.PathError
	if !errors.Is(err, workspace.ErrUnsupported) || !errors.As(err, &pe) || pe.Path != "pipe" {
		t.Fatalf("err = %v, want ErrUnsupported for pipe", err)
	}
	m, err := workspace.Store(ctx, b.Blobs(), root, workspace.Options{Ignore: []string{"pipe"}})
	if err != nil {
		t.Fatal(err)
	}
	if m.Len() != 1 {
		t.Errorf("entries %v, want only a.txt", m.Entries())
	}
}
