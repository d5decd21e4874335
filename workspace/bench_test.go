package workspace_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/factline/factline/workspace"
)

// benchFiles is the size of the benchmark tree: a mid-sized repository.
const benchFiles = 2000

// benchTree writes benchFiles files of 512 B to 8.5 KiB (about 9 MiB in all)
// across 120 directories.
func benchTree(b *testing.B, root string) {
	b.Helper()
	rng := rand.New(rand.NewPCG(1, 2))
	const alphabet = "abcdefghijklmnopqrstuvwxyz0123456789 \n{}();=+-*/"
	for i := range benchFiles {
		data := make([]byte, 512+rng.IntN(8*1024))
		for j := range data {
			data[j] = alphabet[rng.IntN(len(alphabet))]
		}
		put(b, root, fmt.Sprintf("pkg%02d/sub%d/file%04d.go", i%40, i%3, i), string(data), 0o644)
	}
}

// BenchmarkRefresh measures a rescan of a 2,000-file tree after a tool
// changed one file: the incremental Refresh (stat every file, reread one)
// against a full rehash of every file, and, for scale, an unchanged
// Refresh and a Seal (full rehash plus a Put per blob). Each changed
// version is new content, so every changed-file iteration also stores one
// content blob and one manifest on the embedded server. The write itself is
// not timed.
func BenchmarkRefresh(b *testing.B) {
	ctx := context.Background()
	bs := store(b)
	root := b.TempDir()
	benchTree(b, root)
	w, err := workspace.Open(ctx, bs.Blobs(), root, later()) // a clock an hour ahead: no record is racy
	if err != nil {
		b.Fatal(err)
	}
	target := filepath.Join(root, "pkg07/sub1/file0007.go")
	version := 0
	change := func(b *testing.B) {
		b.StopTimer()
		version++
		if err := os.WriteFile(target, fmt.Appendf(nil, "package p // version %d\n", version), 0o644); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
	run := func(name string, modify bool, scan func() error, wantHashed int) {
		b.Run(name, func(b *testing.B) {
			hashed, n := 0, 0
			for b.Loop() {
				if modify {
					change(b)
				}
				if err := scan(); err != nil {
					b.Fatal(err)
				}
				st := w.Stats()
				if st.Hashed != wantHashed {
					b.Fatalf("scan hashed %d files, want %d", st.Hashed, wantHashed)
				}
				hashed += st.Hashed
				n++
			}
			b.ReportMetric(float64(hashed)/float64(n), "files-hashed/op")
		})
	}
	refresh := func() error { _, err := w.Refresh(ctx); return err }
	rehash := func() error { _, err := w.RehashAll(ctx); return err }
	seal := func() error { _, err := w.Seal(ctx); return err }
	run("refresh-1-changed", true, refresh, 1)
	run("rehash-all-1-changed", true, rehash, benchFiles)
	run("refresh-unchanged", false, refresh, 0)
	run("seal-unchanged", false, seal, benchFiles)
}
