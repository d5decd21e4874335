package workspace_test

import (
	"context"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/factline/factline/bus"
	"github.com/factline/factline/events"
	"github.com/factline/factline/workspace"
)

// sizeSpy is the real store, recording the largest blob that went through
// it as one byte slice (Put, Get); streamed blobs do not count.
type sizeSpy struct {
	*bus.Blobs
	mu             sync.Mutex
	maxPut, maxGet int
}

func (s *sizeSpy) Put(ctx context.Context, data []byte) (events.Digest, error) {
	s.mu.Lock()
	s.maxPut = max(s.maxPut, len(data))
	s.mu.Unlock()
	return s.Blobs.Put(ctx, data)
}

func (s *sizeSpy) Get(ctx context.Context, d events.Digest) ([]byte, error) {
	data, err := s.Blobs.Get(ctx, d)
	s.mu.Lock()
	s.maxGet = max(s.maxGet, len(data))
	s.mu.Unlock()
	return data, err
}

func (s *sizeSpy) largest() (put, get int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.maxPut, s.maxGet
}

// A large file is stored, restored, rescanned, sealed and reverted as a
// stream, never held whole: memory is a small constant per file, not its
// size. Small files still travel as byte slices.
func TestLargeFilesStream(t *testing.T) {
	ctx := ctxFor(t)
	spy := &sizeSpy{Blobs: store(t).Blobs()}
	const big = 4 << 20 // above workspace.StreamAbove
	rng := rand.New(rand.NewPCG(1, 2))
	content := make([]byte, big)
	for i := range content {
		content[i] = byte(rng.Uint32())
	}
	dir := t.TempDir()
	put(t, dir, "big.bin", string(content), 0o644)
	put(t, dir, "copy/big.bin", string(content), 0o755) // the same content twice
	put(t, dir, "small.txt", "small\n", 0o644)

	m, err := workspace.Store(ctx, spy, dir, workspace.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if p, _ := spy.largest(); p >= workspace.StreamAbove {
		t.Fatalf("Store put a %d-byte blob whole", p)
	}
	dst := filepath.Join(t.TempDir(), "w")
	w, err := workspace.Materialise(ctx, spy, m.Digest(), dst, workspace.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, g := spy.largest(); g >= workspace.StreamAbove {
		t.Fatalf("Materialise got a %d-byte blob whole", g)
	}
	if describe(t, dst) != describe(t, dir) {
		t.Fatal("the restored tree differs")
	}

	// A changed large file is hashed and stored as a stream too, and the
	// new content restores.
	content[0] ^= 1
	put(t, dst, "big.bin", string(content), 0o644)
	c, err := w.Refresh(ctx)
	if err != nil || paths(c.Paths) != "modified big.bin" {
		t.Fatalf("refresh: %v, %v", paths(c.Paths), err)
	}
	sealed, err := w.Seal(ctx)
	if err != nil {
		t.Fatal(err)
	}
	again := filepath.Join(t.TempDir(), "again")
	if _, err := workspace.Materialise(ctx, spy, sealed, again, workspace.Options{}); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(filepath.Join(again, "big.bin")); string(got) != string(content) {
		t.Fatal("the changed large file did not round-trip")
	}

	// Revert restores a lost large file from the store, as a stream.
	must(t, os.Remove(filepath.Join(dst, "copy", "big.bin")))
	if err := w.Revert(ctx); err != nil {
		t.Fatal(err)
	}
	if describe(t, dst) != describe(t, again) {
		t.Fatal("revert did not restore the large file")
	}
	if p, g := spy.largest(); p >= workspace.StreamAbove || g >= workspace.StreamAbove {
		t.Fatalf("a large blob went whole: put %d, get %d", p, g)
	}
}
