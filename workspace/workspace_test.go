package workspace_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/factline/factline/bus"
	"github.com/factline/factline/bus/bustest"
	"github.com/factline/factline/events"
	"github.com/factline/factline/workspace"
)

// fixture writes a tree with every kind of entry and awkward names.
func fixture(t *testing.T, root, outside string) {
	t.Helper()
	put(t, root, "README.md", "# case\n", 0o644)
	put(t, root, "src/main.go", "package main\n\nfunc main() {}\n", 0o644)
	put(t, root, "src/copy.go", "package main\n\nfunc main() {}\n", 0o644) // same content: one blob
	put(t, root, "bin/run.sh", "#!/bin/sh\necho hi\n", 0o755)
	put(t, root, "empty.txt", "", 0o644)
	put(t, root, "odd names/with space %25.txt", "spaces and percent\n", 0o644)
	put(t, root, "odd names/new\nline", "a newline in the name\n", 0o644)
	put(t, root, "odd names/ünïcødé.md", "unicode\n", 0o644)
	link(t, root, "src/link.go", "main.go")
	link(t, root, "docs", "src")
	link(t, root, "escape", filepath.Join(outside, "secret"))
	mkdir(t, root, "out/empty")
}

func TestStoreMaterialiseRoundTrip(t *testing.T) {
	ctx, b := ctxFor(t), store(t)
	base := t.TempDir()
	src := filepath.Join(base, "src")
	fixture(t, src, filepath.Join(base, "outside"))

	m, err := workspace.Store(ctx, b.Blobs(), src, workspace.Options{})
	if err != nil {
		t.Fatalf("store: %v", err)
	}
	if m.Len() != 12 {
		t.Fatalf("manifest has %d entries, want 12 (8 files, 3 symlinks, out/empty): %v", m.Len(), m.Entries())
	}
	if e, ok := m.Lookup("bin/run.sh"); !ok || e.Kind != workspace.KindExec {
		t.Errorf("bin/run.sh = %+v, %v; want an exec entry", e, ok)
	}
	if e, ok := m.Lookup("out/empty"); !ok || e.Kind != workspace.KindDir {
		t.Errorf("out/empty = %+v, %v; want a dir entry", e, ok)
	}
	if _, ok := m.Lookup("out"); ok {
		t.Errorf("out has a recorded entry below it and must not be recorded itself")
	}
	if e, ok := m.Lookup("docs"); !ok || e.Kind != workspace.KindSymlink || e.Target != "src" {
		t.Errorf("docs = %+v, %v; want a symlink to src", e, ok)
	}

	dst := filepath.Join(base, "restored", "here") // created, parents too
	w, err := workspace.Materialise(ctx, b.Blobs(), m.Digest(), dst, workspace.Options{})
	if err != nil {
		t.Fatalf("materialise: %v", err)
	}
	if got, want := describe(t, dst), describe(t, src); got != want {
		t.Fatalf("restored tree differs:\n got:\n%s\nwant:\n%s", got, want)
	}
	if w.Digest() != m.Digest() {
		t.Errorf("workspace digest %s, want %s", w.Digest(), m.Digest())
	}
	// The restored tree scans to the same digest, and a first refresh sees
	// no change (all files are racy right after writing, so all are reread).
	again, err := workspace.Store(ctx, b.Blobs(), dst, workspace.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if again.Digest() != m.Digest() {
		t.Errorf("restored tree stores as %s, want %s", again.Digest(), m.Digest())
	}
	c, err := w.Refresh(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if c.Changed() || len(c.Paths) != 0 || c.After != m.Digest() {
		t.Errorf("first refresh after materialise: %+v, want no change", c)
	}
}

func TestMaterialiseFetchesEachBlobOnce(t *testing.T) {
	ctx, b := ctxFor(t), store(t)
	src := t.TempDir()
	for _, p := range []string{"a", "b", "c/d", "c/e"} {
		put(t, src, p, "same bytes\n", 0o644)
	}
	put(t, src, "f", "other bytes\n", 0o644)
	m, err := workspace.Store(ctx, b.Blobs(), src, workspace.Options{})
	if err != nil {
		t.Fatal(err)
	}
	cb := &countingBlobs{Blobs: b.Blobs()}
	if _, err := workspace.Materialise(ctx, cb, m.Digest(), filepath.Join(t.TempDir(), "w"), workspace.Options{}); err != nil {
		t.Fatal(err)
	}
	if len(cb.gets) != 3 { // the manifest and two contents
		t.Errorf("materialise made %d Get calls, want 3: %v", len(cb.gets), cb.gets)
	}
}

func TestDigestIsContentNotLabel(t *testing.T) {
	ctx, b := ctxFor(t), store(t)
	base := t.TempDir()
	one, two := filepath.Join(base, "case-a"), filepath.Join(base, "other-label")
	for _, root := range []string{one, two} {
		put(t, root, "x/y.txt", "same\n", 0o644)
		put(t, root, "run", "#!/bin/sh\n", 0o755)
	}
	// Other times and non-exec permission bits are not content.
	old := time.Now().Add(-48 * time.Hour)
	if err := os.Chtimes(filepath.Join(two, "x/y.txt"), old, old); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(filepath.Join(two, "x/y.txt"), 0o600); err != nil {
		t.Fatal(err)
	}
	m1, err := workspace.Store(ctx, b.Blobs(), one, workspace.Options{})
	if err != nil {
		t.Fatal(err)
	}
	m2, err := workspace.Store(ctx, b.Blobs(), two, workspace.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if m1.Digest() != m2.Digest() {
		t.Fatalf("identical content under two labels: %s != %s", m1.Digest(), m2.Digest())
	}
	// The exec bit is content.
	if err := os.Chmod(filepath.Join(two, "run"), 0o644); err != nil {
		t.Fatal(err)
	}
	m3, err := workspace.Store(ctx, b.Blobs(), two, workspace.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if m3.Digest() == m1.Digest() {
		t.Fatalf("dropping the exec bit did not change the digest")
	}
}

func TestRenameChangesDigest(t *testing.T) {
	ctx, b := ctxFor(t), store(t)
	root := t.TempDir()
	put(t, root, "a.txt", "hello\n", 0o644)
	w, err := workspace.Open(ctx, b.Blobs(), root, later())
	if err != nil {
		t.Fatal(err)
	}
	before := w.Digest()
	if err := os.Rename(filepath.Join(root, "a.txt"), filepath.Join(root, "b.txt")); err != nil {
		t.Fatal(err)
	}
	c, err := w.Refresh(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !c.Changed() || c.Before != before || c.After == before || w.Digest() != c.After {
		t.Fatalf("rename: %+v (before %s), want a new digest", c, before)
	}
	if got, want := paths(c.Paths), "removed a.txt, added b.txt"; got != want {
		t.Errorf("paths = %q, want %q", got, want)
	}
	if got := c.Paths[1].New; got.Digest != events.DigestOf([]byte("hello\n")) {
		t.Errorf("added entry %+v does not carry the content digest", got)
	}
}

func TestIdenticalRewriteIsNoChange(t *testing.T) {
	ctx, b := ctxFor(t), store(t)
	root := t.TempDir()
	put(t, root, "a.txt", "hello\n", 0o644)
	put(t, root, "b.txt", "world\n", 0o644)
	w, err := workspace.Open(ctx, b.Blobs(), root, later())
	if err != nil {
		t.Fatal(err)
	}
	before := w.Digest()
	put(t, root, "a.txt", "hello\n", 0o644) // a tool wrote the same bytes again
	c, err := w.Refresh(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if c.Changed() || len(c.Paths) != 0 || c.After != before || w.Digest() != before {
		t.Fatalf("identical rewrite reported %+v", c)
	}
	if st := w.Stats(); st.Hashed != 1 || st.Reused != 1 {
		t.Errorf("stats %+v: want the rewritten file reread and the other trusted", st)
	}
}

func TestTouchWithoutChangeIsNoChange(t *testing.T) {
	ctx, b := ctxFor(t), store(t)
	root := t.TempDir()
	put(t, root, "a.txt", "hello\n", 0o644)
	put(t, root, "b.txt", "world\n", 0o644)
	w, err := workspace.Open(ctx, b.Blobs(), root, later())
	if err != nil {
		t.Fatal(err)
	}
	before := w.Digest()
	newer := time.Now().Add(time.Minute)
	if err := os.Chtimes(filepath.Join(root, "b.txt"), newer, newer); err != nil {
		t.Fatal(err)
	}
	c, err := w.Refresh(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if c.Changed() || len(c.Paths) != 0 || w.Digest() != before {
		t.Fatalf("touch reported %+v", c)
	}
	if st := w.Stats(); st.Hashed != 1 || st.HashedBytes != 6 || st.Reused != 1 {
		t.Errorf("stats %+v: want the touched file rehashed, the other trusted", st)
	}
	// The new stat is recorded: the next scan trusts it.
	if _, err := w.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	if st := w.Stats(); st.Hashed != 0 || st.Reused != 2 {
		t.Errorf("stats after a second refresh %+v: want nothing reread", st)
	}
}

func TestSameSizeSameMtimeRewriteIsDetected(t *testing.T) {
	ctx, b := ctxFor(t), store(t)
	root := t.TempDir()
	put(t, root, "a.txt", "version 1\n", 0o644)
	p := filepath.Join(root, "a.txt")
	mtime := time.Now().Add(-time.Hour).Truncate(time.Second)
	if err := os.Chtimes(p, mtime, mtime); err != nil {
		t.Fatal(err)
	}
	w, err := workspace.Open(ctx, b.Blobs(), root, later())
	if err != nil {
		t.Fatal(err)
	}
	before := w.Digest()
	// Same size, and the mtime put back as it was (like cp -p or tar).
	put(t, root, "a.txt", "version 2\n", 0o644)
	if err := os.Chtimes(p, mtime, mtime); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(p); err != nil || fi.Size() != 10 || !fi.ModTime().Equal(mtime) {
		t.Fatalf("setup: stat %v, %v", fi, err)
	}
	c, err := w.Refresh(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !c.Changed() || c.Before != before {
		t.Fatalf("same-size same-mtime rewrite not detected: %+v", c)
	}
	if got, want := paths(c.Paths), "modified a.txt"; got != want {
		t.Errorf("paths = %q, want %q", got, want)
	}
}

func TestRacyRuleCatchesWriteInTheRecordingTick(t *testing.T) {
	ctx := ctxFor(t)
	b := store(t)
	for _, tc := range []struct {
		name     string
		clockLag time.Duration // scan time minus the files' ctime
		racy     bool
	}{
		{"recorded in the same tick", 0, true},
		{"recorded within the window", workspace.RacyWindow - time.Millisecond, true},
		{"recorded long after", workspace.RacyWindow + time.Second, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			put(t, root, "a.txt", "version 1\n", 0o644)
			// Written apart, as on a loaded machine: the window is each
			// record's own, not the newest file's.
			time.Sleep(5 * time.Millisecond)
			put(t, root, "b.txt", "untouched\n", 0o644)
			// Each file's latest stat time; the two writes may be
			// milliseconds apart on a loaded machine.
			var oldest, newest time.Time
			for _, f := range []string{"a.txt", "b.txt"} {
				fi, err := os.Stat(filepath.Join(root, f))
				if err != nil {
					t.Fatal(err)
				}
				latest := fi.ModTime()
				if c := ctimeOf(fi); c.After(latest) {
					latest = c
				}
				if oldest.IsZero() || latest.Before(oldest) {
					oldest = latest
				}
				if latest.After(newest) {
					newest = latest
				}
			}
			// Within the window of both records, or past it for both.
			scanAt := oldest.Add(tc.clockLag)
			if !tc.racy {
				scanAt = newest.Add(tc.clockLag)
			}
			opts := workspace.WithClock(workspace.Options{}, func() time.Time { return scanAt })
			w, err := workspace.Open(ctx, b.Blobs(), root, opts)
			if err != nil {
				t.Fatal(err)
			}
			if got := w.RecordIsRacy("a.txt"); got != tc.racy {
				t.Fatalf("record racy = %v, want %v", got, tc.racy)
			}
			before := w.Digest()
			put(t, root, "a.txt", "version 2\n", 0o644)
			// The write landed in the tick of the recording: every stat
			// field the scan compares looks unchanged.
			if err := w.SimulateSameTickWrite("a.txt"); err != nil {
				t.Fatal(err)
			}
			scanAt = scanAt.Add(time.Hour)
			c, err := w.Refresh(ctx)
			if err != nil {
				t.Fatal(err)
			}
			st := w.Stats()
			if tc.racy {
				if !c.Changed() || paths(c.Paths) != "modified a.txt" {
					t.Fatalf("racy record: change %+v not detected", c)
				}
				if st.Racy != 2 || st.Hashed != 2 {
					t.Errorf("stats %+v: want both racy records reread", st)
				}
			} else {
				// The control: without the racy rule nothing can see the
				// write, which is why the rule exists.
				if c.Changed() || c.After != before {
					t.Fatalf("trusted record: change %+v", c)
				}
				if st.Racy != 0 || st.Hashed != 0 || st.Reused != 2 {
					t.Errorf("stats %+v: want both records trusted", st)
				}
			}
			// Rehashed an hour later, the records are no longer racy.
			if w.RecordIsRacy("a.txt") {
				t.Errorf("a.txt is still racy after a later scan")
			}
		})
	}
}

func TestRefreshRehashesOnlyChangedFiles(t *testing.T) {
	ctx, b := ctxFor(t), store(t)
	root := t.TempDir()
	for i := range 50 {
		put(t, root, filepath.Join("d", string(rune('a'+i%5)), "f"+string(rune('a'+i/5))+".txt"), "file content "+string(rune('A'+i))+"\n", 0o644)
	}
	cb := &countingBlobs{Blobs: b.Blobs()}
	w, err := workspace.Open(ctx, cb, root, later())
	if err != nil {
		t.Fatal(err)
	}
	if st := w.Stats(); st.Hashed != 50 || st.Files != 50 || st.BlobsPut != 51 {
		t.Fatalf("open stats %+v: want 50 files hashed, 50 blobs and the manifest put", st)
	}

	cb.reset()
	c, err := w.Refresh(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st := w.Stats(); c.Changed() || st.Hashed != 0 || st.Reused != 50 || st.BlobsPut != 0 || len(cb.puts) != 0 {
		t.Fatalf("unchanged tree: change %+v stats %+v puts %d: want nothing reread or stored", c, w.Stats(), len(cb.puts))
	}

	put(t, root, "d/c/fe.txt", "a new version\n", 0o644)
	put(t, root, "d/new.txt", "brand new\n", 0o644)
	if err := os.Remove(filepath.Join(root, "d/a/fa.txt")); err != nil {
		t.Fatal(err)
	}
	c, err = w.Refresh(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := paths(c.Paths), "removed d/a/fa.txt, modified d/c/fe.txt, added d/new.txt"; got != want {
		t.Errorf("paths = %q, want %q", got, want)
	}
	st := w.Stats()
	if st.Hashed != 2 || st.Reused != 48 || st.Files != 50 || st.Scans != 3 {
		t.Errorf("stats %+v: want exactly the modified and the added file reread", st)
	}
	if st.BlobsPut != 3 || len(cb.puts) != 3 { // two contents and the manifest
		t.Errorf("stats %+v, puts %v: want two content blobs and the manifest stored", st, cb.puts)
	}
	// Every reported digest is restorable.
	if _, err := workspace.Materialise(ctx, b.Blobs(), c.After, filepath.Join(t.TempDir(), "w"), workspace.Options{}); err != nil {
		t.Errorf("materialise the refreshed digest: %v", err)
	}
}

func TestRefreshStoresManifestOnlyForNewDigests(t *testing.T) {
	ctx, b := ctxFor(t), store(t)
	root := t.TempDir()
	put(t, root, "a.txt", "one\n", 0o644)
	cb := &countingBlobs{Blobs: b.Blobs()}
	w, err := workspace.Open(ctx, cb, root, later())
	if err != nil {
		t.Fatal(err)
	}
	first := w.Digest()
	put(t, root, "a.txt", "two\n", 0o644)
	if _, err := w.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	cb.reset()
	put(t, root, "a.txt", "one\n", 0o644) // back to the first tree
	c, err := w.Refresh(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if c.After != first || !c.Changed() {
		t.Fatalf("revert: %+v, want back to %s", c, first)
	}
	if len(cb.puts) != 0 {
		t.Errorf("reverting to known content put %v; the store has all of it", cb.puts)
	}
}

func TestSealStoresEverythingAndTrustsNoStat(t *testing.T) {
	ctx, b := ctxFor(t), store(t)
	root := t.TempDir()
	put(t, root, "a.txt", "alpha\n", 0o644)
	put(t, root, "b.txt", "alpha\n", 0o644)
	put(t, root, "c/d.sh", "#!/bin/sh\n", 0o755)
	link(t, root, "l", "a.txt")
	cb := &countingBlobs{Blobs: b.Blobs()}
	w, err := workspace.Open(ctx, cb, root, later())
	if err != nil {
		t.Fatal(err)
	}
	put(t, root, "c/new.txt", "added before sealing\n", 0o644)
	cb.reset()
	d, err := w.Seal(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if d != w.Digest() {
		t.Errorf("seal returned %s, workspace digest is %s", d, w.Digest())
	}
	st := w.Stats()
	if st.Hashed != 4 || st.Reused != 0 {
		t.Errorf("seal stats %+v: want every file reread", st)
	}
	// Three distinct contents and the manifest, each put (the store skips
	// those it has).
	if len(cb.puts) != 4 || st.BlobsPut != 4 || cb.puts[len(cb.puts)-1] != d {
		t.Errorf("seal put %v (stats %+v): want 3 contents then the manifest", cb.puts, st)
	}
	// A grader on another machine restores it from the store alone.
	dst := filepath.Join(t.TempDir(), "grader")
	g, err := workspace.Materialise(ctx, b.Blobs(), d, dst, workspace.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := describe(t, dst), describe(t, root); got != want {
		t.Fatalf("sealed tree restores as\n%s\nwant\n%s", got, want)
	}
	if g.Digest() != d {
		t.Errorf("grader digest %s, want %s", g.Digest(), d)
	}
}

func TestMaterialiseRefusesCorruptBlob(t *testing.T) {
	ctx := ctxFor(t)
	b, srv := bustest.Start(t)
	src := t.TempDir()
	put(t, src, "good.txt", "good\n", 0o644)
	put(t, src, "victim.txt", "the victim\n", 0o644)
	m, err := workspace.Store(ctx, b.Blobs(), src, workspace.Options{})
	if err != nil {
		t.Fatal(err)
	}
	victim := events.DigestOf([]byte("the victim\n"))

	t.Run("a store that serves altered bytes", func(t *testing.T) {
		dst := filepath.Join(t.TempDir(), "w")
		_, err := workspace.Materialise(ctx, tamperingBlobs{Blobs: b.Blobs(), victim: victim}, m.Digest(), dst, workspace.Options{})
		if !errors.Is(err, workspace.ErrCorrupt) {
			t.Fatalf("err = %v, want ErrCorrupt", err)
		}
		if _, err := os.Stat(dst); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("the target Materialise created is still there: %v", err)
		}
	})
	t.Run("a tampered manifest", func(t *testing.T) {
		dst := t.TempDir() // exists and is empty: it must stay
		_, err := workspace.Materialise(ctx, tamperingBlobs{Blobs: b.Blobs(), victim: m.Digest()}, m.Digest(), dst, workspace.Options{})
		if !errors.Is(err, workspace.ErrCorrupt) {
			t.Fatalf("err = %v, want ErrCorrupt", err)
		}
		if !isEmptyDir(t, dst) {
			t.Errorf("target not left empty")
		}
	})
	t.Run("an object overwritten in the real store", func(t *testing.T) {
		nc, err := srv.Connect()
		if err != nil {
			t.Fatal(err)
		}
		defer nc.Close()
		js, err := jetstream.New(nc)
		if err != nil {
			t.Fatal(err)
		}
		obj, err := js.ObjectStore(ctx, bus.BlobBucket)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := obj.PutBytes(ctx, victim.Hex(), []byte("the villain\n")); err != nil {
			t.Fatal(err)
		}
		dst := t.TempDir()
		_, err = workspace.Materialise(ctx, b.Blobs(), m.Digest(), dst, workspace.Options{})
		if err == nil {
			t.Fatal("materialised a tree whose blob was overwritten")
		}
		if !isEmptyDir(t, dst) {
			t.Errorf("target not left empty after %v", err)
		}
	})
}

func TestMaterialiseRefusesMissingBlob(t *testing.T) {
	ctx, b := ctxFor(t), store(t)
	_, err := workspace.Materialise(ctx, b.Blobs(), events.DigestOf([]byte("never stored")), filepath.Join(t.TempDir(), "w"), workspace.Options{})
	if !errors.Is(err, bus.ErrBlobNotFound) {
		t.Fatalf("err = %v, want bus.ErrBlobNotFound", err)
	}
}

func TestMaterialiseRefusesEscapingManifest(t *testing.T) {
	ctx, b := ctxFor(t), store(t)
	content, err := b.Blobs().Put(ctx, []byte("pwned\n"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, body string
		sentinel   error
	}{
		{"dot dot", "../evil file 6 " + string(content) + "\n", workspace.ErrEscape},
		{"absolute", "/tmp/evil file 6 " + string(content) + "\n", workspace.ErrEscape},
		{"climbing inside", "a/../../evil file 6 " + string(content) + "\n", workspace.ErrEscape},
		{"below a symlink", "a symlink 4 /tmp\na/evil file 6 " + string(content) + "\n", workspace.ErrInvalidPath},
		{"dot", "./evil file 6 " + string(content) + "\n", workspace.ErrInvalidPath},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, err := b.Blobs().Put(ctx, []byte("factline-manifest v1\n"+tc.body))
			if err != nil {
				t.Fatal(err)
			}
			base := t.TempDir()
			dst := filepath.Join(base, "w")
			_, err = workspace.Materialise(ctx, b.Blobs(), d, dst, workspace.Options{})
			if !errors.Is(err, workspace.ErrBadManifest) || !errors.Is(err, tc.sentinel) {
				t.Fatalf("err = %v, want ErrBadManifest and %v", err, tc.sentinel)
			}
			var pe *workspace.PathError
			if !errors.As(err, &pe) || pe.Path == "" {
				t.Errorf("err %v carries no *PathError naming the path", err)
			}
			if des, _ := os.ReadDir(base); len(des) != 0 {
				t.Errorf("something was written: %v", des)
			}
		})
	}
}

func TestMaterialiseRefusesNonEmptyTarget(t *testing.T) {
	ctx, b := ctxFor(t), store(t)
	src := t.TempDir()
	put(t, src, "a.txt", "a\n", 0o644)
	m, err := workspace.Store(ctx, b.Blobs(), src, workspace.Options{})
	if err != nil {
		t.Fatal(err)
	}
	dst := t.TempDir()
	put(t, dst, ".keep", "mine\n", 0o644)
	if _, err := workspace.Materialise(ctx, b.Blobs(), m.Digest(), dst, workspace.Options{}); !errors.Is(err, workspace.ErrNotEmpty) {
		t.Fatalf("err = %v, want ErrNotEmpty", err)
	}
	if b, err := os.ReadFile(filepath.Join(dst, ".keep")); err != nil || string(b) != "mine\n" {
		t.Errorf("the target's own file was touched: %q, %v", b, err)
	}
	if _, err := os.Stat(filepath.Join(dst, "a.txt")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a.txt was written into a non-empty target")
	}
}

func TestBounds(t *testing.T) {
	ctx, b := ctxFor(t), store(t)
	root := t.TempDir()
	put(t, root, "a", "12345", 0o644)
	put(t, root, "b", "67890", 0o644)
	link(t, root, "c", "a")

	t.Run("store refuses too many entries", func(t *testing.T) {
		_, err := workspace.Store(ctx, b.Blobs(), root, workspace.Options{MaxEntries: 2})
		if !errors.Is(err, workspace.ErrTooLarge) {
			t.Fatalf("err = %v, want ErrTooLarge", err)
		}
		if _, err := workspace.Store(ctx, b.Blobs(), root, workspace.Options{MaxEntries: 3}); err != nil {
			t.Errorf("exactly at the bound: %v", err)
		}
	})
	t.Run("store refuses too many bytes", func(t *testing.T) {
		_, err := workspace.Store(ctx, b.Blobs(), root, workspace.Options{MaxBytes: 9})
		if !errors.Is(err, workspace.ErrTooLarge) {
			t.Fatalf("err = %v, want ErrTooLarge", err)
		}
		if _, err := workspace.Store(ctx, b.Blobs(), root, workspace.Options{MaxBytes: 10}); err != nil {
			t.Errorf("exactly at the bound: %v", err)
		}
	})
	t.Run("refresh refuses growth and keeps its state", func(t *testing.T) {
		dir := t.TempDir()
		put(t, dir, "a", "12345", 0o644)
		w, err := workspace.Open(ctx, b.Blobs(), dir, workspace.WithClock(workspace.Options{MaxBytes: 8}, func() time.Time { return time.Now().Add(time.Hour) }))
		if err != nil {
			t.Fatal(err)
		}
		before := w.Digest()
		put(t, dir, "b", "6789", 0o644)
		if _, err := w.Refresh(ctx); !errors.Is(err, workspace.ErrTooLarge) {
			t.Fatalf("err = %v, want ErrTooLarge", err)
		}
		if w.Digest() != before || w.Manifest().Len() != 1 {
			t.Errorf("a refused refresh changed the state: %s, %d entries", w.Digest(), w.Manifest().Len())
		}
		put(t, dir, "a", "1234", 0o644) // back under the bound: 8 bytes
		c, err := w.Refresh(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := paths(c.Paths), "modified a, added b"; got != want {
			t.Errorf("paths = %q, want %q", got, want)
		}
	})
	t.Run("materialise refuses before writing", func(t *testing.T) {
		m, err := workspace.Store(ctx, b.Blobs(), root, workspace.Options{})
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range []workspace.Options{{MaxEntries: 2}, {MaxBytes: 9}} {
			dst := filepath.Join(t.TempDir(), "w")
			if _, err := workspace.Materialise(ctx, b.Blobs(), m.Digest(), dst, o); !errors.Is(err, workspace.ErrTooLarge) {
				t.Fatalf("options %+v: err = %v, want ErrTooLarge", o, err)
			}
			if _, err := os.Stat(dst); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("options %+v: target created", o)
			}
		}
	})
	t.Run("negative bounds are refused", func(t *testing.T) {
		if _, err := workspace.Store(ctx, b.Blobs(), root, workspace.Options{MaxEntries: -1}); err == nil {
			t.Fatal("negative MaxEntries accepted")
		}
	})
}

func TestIgnore(t *testing.T) {
	ctx, b := ctxFor(t), store(t)
	root := t.TempDir()
	put(t, root, "main.c", "int main;\n", 0o644)
	put(t, root, "main.o", "\x7fELF", 0o644)
	put(t, root, "lib/util.o", "\x7fELF", 0o644)
	put(t, root, "node_modules/x/index.js", "x\n", 0o644)
	put(t, root, "logs/run.log", "log\n", 0o644)
	put(t, root, "src/logs/keep.log", "kept: the pattern has a slash, so it is anchored\n", 0o644)
	opts := workspace.Options{Ignore: []string{"*.o", "node_modules", "logs/*.log"}}
	m, err := workspace.Store(ctx, b.Blobs(), root, opts)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range m.Entries() {
		got = append(got, e.Path+":"+string(e.Kind))
	}
	want := []string{"lib:dir", "logs:dir", "main.c:file", "src/logs/keep.log:file"}
	if len(got) != len(want) {
		t.Fatalf("entries %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("entries %v, want %v", got, want)
		}
	}
	// Changes to ignored paths are no change.
	w, err := workspace.Open(ctx, b.Blobs(), root, opts)
	if err != nil {
		t.Fatal(err)
	}
	put(t, root, "main.o", "\x7fELF rebuilt", 0o644)
	put(t, root, "node_modules/y.js", "y\n", 0o644)
	if c, err := w.Refresh(ctx); err != nil || c.Changed() {
		t.Fatalf("changes to ignored files: %+v, %v", c, err)
	}
	// A manifest recording a path these rules would drop is refused.
	full, err := workspace.Store(ctx, b.Blobs(), root, workspace.Options{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = workspace.Materialise(ctx, b.Blobs(), full.Digest(), filepath.Join(t.TempDir(), "w"), opts)
	if !errors.Is(err, workspace.ErrIgnored) {
		t.Fatalf("err = %v, want ErrIgnored", err)
	}
	for _, bad := range []string{"[", "", "/abs", "dir/"} {
		if _, err := workspace.Store(ctx, b.Blobs(), root, workspace.Options{Ignore: []string{bad}}); err == nil {
			t.Errorf("bad pattern %q accepted", bad)
		}
	}
}

func TestEmptyDirectories(t *testing.T) {
	ctx, b := ctxFor(t), store(t)
	root := t.TempDir()
	mkdir(t, root, "out")
	w, err := workspace.Open(ctx, b.Blobs(), root, later())
	if err != nil {
		t.Fatal(err)
	}
	if e, ok := w.Manifest().Lookup("out"); !ok || e.Kind != workspace.KindDir {
		t.Fatalf("empty out = %+v, %v; want a dir entry", e, ok)
	}
	put(t, root, "out/a.o", "obj", 0o644)
	c, err := w.Refresh(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := paths(c.Paths), "removed out, added out/a.o"; got != want {
		t.Errorf("filling a directory: paths = %q, want %q", got, want)
	}
	if err := os.Remove(filepath.Join(root, "out/a.o")); err != nil {
		t.Fatal(err)
	}
	c, err = w.Refresh(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := paths(c.Paths), "added out, removed out/a.o"; got != want {
		t.Errorf("emptying a directory: paths = %q, want %q", got, want)
	}
	if err := os.Remove(filepath.Join(root, "out")); err != nil {
		t.Fatal(err)
	}
	if c, err = w.Refresh(ctx); err != nil || paths(c.Paths) != "removed out" {
		t.Errorf("removing it: %+v, %v", c, err)
	}
}

func TestSymlinkAndModeChanges(t *testing.T) {
	ctx, b := ctxFor(t), store(t)
	root := t.TempDir()
	put(t, root, "run", "#!/bin/sh\n", 0o644)
	link(t, root, "l", "run")
	w, err := workspace.Open(ctx, b.Blobs(), root, later())
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(filepath.Join(root, "run"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(root, "l")); err != nil {
		t.Fatal(err)
	}
	link(t, root, "l", "./run")
	c, err := w.Refresh(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := paths(c.Paths), "modified l, modified run"; got != want {
		t.Fatalf("paths = %q, want %q", got, want)
	}
	if c.Paths[0].New.Target != "./run" || c.Paths[1].Old.Kind != workspace.KindFile || c.Paths[1].New.Kind != workspace.KindExec {
		t.Errorf("changes %+v", c.Paths)
	}
}

func TestRefreshHonoursContext(t *testing.T) {
	ctx, b := ctxFor(t), store(t)
	root := t.TempDir()
	put(t, root, "a", "a", 0o644)
	w, err := workspace.Open(ctx, b.Blobs(), root, workspace.Options{})
	if err != nil {
		t.Fatal(err)
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := w.Refresh(cancelled); !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
}

func TestOpenResolvesRootSymlinks(t *testing.T) {
	ctx, b := ctxFor(t), store(t)
	base := t.TempDir()
	real := filepath.Join(base, "real")
	put(t, real, "a", "a", 0o644)
	link(t, base, "alias", "real")
	w, err := workspace.Open(ctx, b.Blobs(), filepath.Join(base, "alias"), workspace.Options{})
	if err != nil {
		t.Fatal(err)
	}
	want, _ := filepath.EvalSymlinks(real)
	if w.Root() != want {
		t.Errorf("root %q, want %q", w.Root(), want)
	}
	if _, err := workspace.Open(ctx, b.Blobs(), filepath.Join(real, "a"), workspace.Options{}); err == nil {
		t.Errorf("opened a regular file as a workspace")
	}
}
