package workspace_test

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/factline/factline/bus"
	"github.com/factline/factline/bus/bustest"
	"github.com/factline/factline/events"
	"github.com/factline/factline/workspace"
)

// store starts a real embedded JetStream server and returns its blob store.
func store(t testing.TB) *bus.Bus {
	t.Helper()
	b, _ := bustest.Start(t)
	return b
}

func ctxFor(t testing.TB) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// later is a clock an hour ahead: every file written by the test is then old
// enough for its recorded stat to be trusted (not racy).
func later() workspace.Options {
	return workspace.WithClock(workspace.Options{}, func() time.Time { return time.Now().Add(time.Hour) })
}

// put writes a file with an exact mode, creating its parents.
func put(t testing.TB, root, rel, content string, mode fs.FileMode) {
	t.Helper()
	p := filepath.Join(root, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, mode); err != nil {
		t.Fatal(err)
	}
}

func link(t testing.TB, root, rel, target string) {
	t.Helper()
	p := filepath.Join(root, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, p); err != nil {
		t.Fatal(err)
	}
}

func mkdir(t testing.TB, root, rel string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Join(root, filepath.FromSlash(rel)), 0o755); err != nil {
		t.Fatal(err)
	}
}

// describe reads a tree with the standard library alone (not the package
// under test): one line per path with its type, permissions and content or
// target. Directories are listed too, so empty ones show.
func describe(t testing.TB, root string) string {
	t.Helper()
	var lines []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		if rel == "." {
			return nil
		}
		fi, err := os.Lstat(p)
		if err != nil {
			return err
		}
		switch {
		case fi.Mode()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			lines = append(lines, fmt.Sprintf("%q symlink -> %q", rel, target))
		case fi.IsDir():
			lines = append(lines, fmt.Sprintf("%q dir", rel))
		default:
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			lines = append(lines, fmt.Sprintf("%q %v %q", rel, fi.Mode().Perm(), b))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

func isEmptyDir(t testing.TB, dir string) bool {
	t.Helper()
	des, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	return len(des) == 0
}

// countingBlobs records the calls made to a real store.
type countingBlobs struct {
	workspace.Blobs
	mu   sync.Mutex
	puts []events.Digest
	gets []events.Digest
}

func (c *countingBlobs) Put(ctx context.Context, data []byte) (events.Digest, error) {
	d, err := c.Blobs.Put(ctx, data)
	c.mu.Lock()
	c.puts = append(c.puts, d)
	c.mu.Unlock()
	return d, err
}

func (c *countingBlobs) Get(ctx context.Context, d events.Digest) ([]byte, error) {
	c.mu.Lock()
	c.gets = append(c.gets, d)
	c.mu.Unlock()
	return c.Blobs.Get(ctx, d)
}

func (c *countingBlobs) reset() {
	c.mu.Lock()
	c.puts, c.gets = nil, nil
	c.mu.Unlock()
}

// tamperingBlobs returns altered bytes of the same length for one digest: a
// store that does not check what it serves.
type tamperingBlobs struct {
	workspace.Blobs
	victim events.Digest
}

func (b tamperingBlobs) Get(ctx context.Context, d events.Digest) ([]byte, error) {
	data, err := b.Blobs.Get(ctx, d)
	if err == nil && d == b.victim {
		data = bytes.Clone(data)
		data[0] ^= 0x20
	}
	return data, err
}

func paths(cs []workspace.PathChange) string {
	var s []string
	for _, c := range cs {
		s = append(s, string(c.Kind)+" "+c.Path)
	}
	return strings.Join(s, ", ")
}
