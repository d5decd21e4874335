package workspace

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sync"

	"github.com/factline/factline/events"
)

// Workspace is an open working directory whose tree is tracked: after a tool
// ran, Refresh rescans it and reports what changed. Its methods are safe for
// concurrent use, but a scan must not race with tools writing the tree: the
// caller runs tools and scans in turn.
type Workspace struct {
	root  string
	blobs Blobs
	opts  Options

	mu       sync.Mutex
	manifest Manifest
	index    map[string]fileState       // regular files by path
	stored   map[events.Digest]struct{} // blobs known to be in the store
	stats    Stats
}

// Store records the directory dir: every file's content is put once (by
// digest; the store skips blobs it has) and then the manifest. The returned
// manifest's Digest is the workspace digest.
func Store(ctx context.Context, blobs Blobs, dir string, opts Options) (Manifest, error) {
	w, err := Open(ctx, blobs, dir, opts)
	if err != nil {
		return Manifest{}, err
	}
	return w.manifest, nil
}

// Open scans the existing directory dir, stores its tree like Store and
// returns a Workspace on it.
func Open(ctx context.Context, blobs Blobs, dir string, opts Options) (*Workspace, error) {
	root, err := realDir(dir)
	if err != nil {
		return nil, fmt.Errorf("open workspace: %w", err)
	}
	w, err := newWorkspace(blobs, root, opts)
	if err != nil {
		return nil, fmt.Errorf("open workspace %s: %w", root, err)
	}
	if _, err := w.refresh(ctx, true, false); err != nil {
		return nil, fmt.Errorf("open workspace: %w", err)
	}
	return w, nil
}

func newWorkspace(blobs Blobs, root string, opts Options) (*Workspace, error) {
	o, err := opts.normalised()
	if err != nil {
		return nil, err
	}
	return &Workspace{
		root:   root,
		blobs:  blobs,
		opts:   o,
		index:  map[string]fileState{},
		stored: map[events.Digest]struct{}{},
	}, nil
}

// realDir returns the absolute path of the directory dir with every symlink
// resolved.
func realDir(dir string) (string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", fmt.Errorf("root %q: %w", dir, err)
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return "", fmt.Errorf("root %q: %w", dir, err)
	}
	fi, err := os.Stat(real)
	if err != nil {
		return "", fmt.Errorf("root %q: %w", dir, err)
	}
	if !fi.IsDir() {
		return "", fmt.Errorf("root %q: not a directory", dir)
	}
	return real, nil
}

// Root returns the workspace's directory: absolute, with symlinks resolved.
func (w *Workspace) Root() string { return w.root }

// Digest returns the workspace digest as of the last scan.
func (w *Workspace) Digest() events.Digest {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.manifest.Digest()
}

// Manifest returns the manifest as of the last scan.
func (w *Workspace) Manifest() Manifest {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.manifest
}

// Stats returns what the last scan did.
func (w *Workspace) Stats() Stats {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.stats
}

// Refresh rescans the tree after a tool ran. A file is reread and hashed only
// when its stat (size, mode, mtime, ctime, inode, device) differs from the
// last scan's, or when the last scan's record of it was racy (see
// RacyWindow). New file contents are stored, and so is the manifest when the
// digest is one the store was not known to have, so that every digest a
// Workspace reports can be materialised elsewhere. On error the workspace
// keeps its previous state.
func (w *Workspace) Refresh(ctx context.Context) (Change, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.refresh(ctx, false, false)
}

// Seal fixes the final tree for graders: it rereads and rehashes every file,
// trusting no stat, puts every file blob and the manifest (the store skips
// those it has), and returns the digest. Whatever it returns can be
// materialised on any machine that shares the store.
func (w *Workspace) Seal(ctx context.Context) (events.Digest, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if _, err := w.refresh(ctx, true, true); err != nil {
		return "", fmt.Errorf("seal: %w", err)
	}
	return w.manifest.Digest(), nil
}

// refresh scans the tree; full rehashes every file, putAll puts every blob.
func (w *Workspace) refresh(ctx context.Context, full, putAll bool) (Change, error) {
	s := &scanner{
		ctx: ctx, root: w.root, opts: w.opts, blobs: w.blobs,
		prev: w.index, stored: w.stored, full: full, putAll: putAll,
	}
	es, err := s.scan()
	for d := range s.put {
		w.stored[d] = struct{}{}
	}
	if err != nil {
		return Change{}, fmt.Errorf("scan %s: %w", w.root, err)
	}
	m, enc := sealed(es)
	if _, known := w.stored[m.digest]; !known || putAll {
		got, err := w.blobs.Put(ctx, enc)
		if err != nil {
			return Change{}, fmt.Errorf("store manifest of %s: %w", w.root, err)
		}
		if got != m.digest {
			return Change{}, fmt.Errorf("store manifest of %s: %w: the store named it %s, not %s", w.root, ErrCorrupt, got, m.digest)
		}
		w.stored[m.digest] = struct{}{}
		s.stats.BlobsPut++
	}
	c := Change{Before: w.manifest.Digest(), After: m.digest}
	if c.Changed() {
		c.Paths = Diff(w.manifest, m)
	}
	s.stats.Scans = w.stats.Scans + 1
	w.manifest, w.index, w.stats = m, s.index, s.stats
	return c, nil
}

// Materialise restores the tree named by digest into dir, which must be
// empty or absent (it is created), and returns a Workspace on it. The
// manifest and every blob are checked against their digests; files get mode
// 0644 or 0755, symlinks their recorded targets (targets outside the root are
// restored, but Resolve refuses to follow them), empty directories are
// created. A manifest with an escaping or malformed path, more entries or
// bytes than opts allows, or a path opts.Ignore would leave out is refused
// before anything is written. On error dir is left empty (or removed, if
// Materialise created it).
func Materialise(ctx context.Context, blobs Blobs, digest events.Digest, dir string, opts Options) (*Workspace, error) {
	o, err := opts.normalised()
	if err != nil {
		return nil, fmt.Errorf("materialise %s: %w", digest, err)
	}
	m, err := LoadManifest(ctx, blobs, digest)
	if err != nil {
		return nil, fmt.Errorf("materialise: %w", err)
	}
	if m.Len() > o.MaxEntries {
		return nil, fmt.Errorf("materialise %s: %w", digest, tooMany("the manifest", o.MaxEntries))
	}
	if m.Bytes() > o.MaxBytes {
		return nil, fmt.Errorf("materialise %s: %w", digest, tooBig("the manifest", o.MaxBytes))
	}
	for _, e := range m.entries {
		if p, ok := o.ignoredBelow(e.Path); ok {
			return nil, fmt.Errorf("materialise %s: %w", digest,
				pathErr(e.Path, ErrIgnored, "matches the ignore pattern %q: the first refresh would drop it", p))
		}
	}
	root, created, err := prepareTarget(dir)
	if err != nil {
		return nil, fmt.Errorf("materialise %s: %w", digest, err)
	}
	w, err := newWorkspace(blobs, root, o)
	if err != nil {
		return nil, fmt.Errorf("materialise %s: %w", digest, err)
	}
	if err := w.restore(ctx, m); err != nil {
		cleanup(root, created)
		return nil, fmt.Errorf("materialise %s into %s: %w", digest, root, err)
	}
	return w, nil
}

// prepareTarget creates dir or checks that it is an empty directory, and
// returns its real path and whether it was created.
func prepareTarget(dir string) (string, bool, error) {
	fi, err := os.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return "", false, fmt.Errorf("create target: %w", err)
		}
		root, err := realDir(dir)
		return root, true, err
	case err != nil:
		return "", false, fmt.Errorf("target: %w", err)
	case !fi.IsDir():
		return "", false, fmt.Errorf("target %q is not a directory", dir)
	}
	root, err := realDir(dir)
	if err != nil {
		return "", false, err
	}
	f, err := os.Open(root)
	if err != nil {
		return "", false, fmt.Errorf("target: %w", err)
	}
	names, err := f.Readdirnames(1)
	f.Close()
	if len(names) > 0 {
		return "", false, fmt.Errorf("%w: %s holds %q", ErrNotEmpty, root, names[0])
	}
	if err != nil && !errors.Is(err, io.EOF) {
		return "", false, fmt.Errorf("target: %w", err)
	}
	return root, false, nil
}

// cleanup undoes a failed restore.
func cleanup(root string, created bool) {
	if created {
		_ = os.RemoveAll(root)
		return
	}
	des, _ := os.ReadDir(root)
	for _, de := range des {
		_ = os.RemoveAll(filepath.Join(root, de.Name()))
	}
}

// restore writes m into the empty root through an os.Root, so that no write
// can leave it, and records the files' stats as the first scan.
func (w *Workspace) restore(ctx context.Context, m Manifest) error {
	r, err := os.OpenRoot(w.root)
	if err != nil {
		return err
	}
	defer r.Close()
	start := w.opts.now()
	var hashed int
	var hashedBytes int64
	index := make(map[string]fileState)
	// Directories first, then files grouped by content (each blob fetched
	// once), symlinks last: every parent is a directory this function made.
	var links []Entry
	byDigest := map[events.Digest][]Entry{}
	var order []events.Digest
	for _, e := range m.entries {
		switch e.Kind {
		case KindDir:
			if err := r.MkdirAll(filepath.FromSlash(e.Path), 0o755); err != nil {
				return fmt.Errorf("create directory %q: %w", e.Path, err)
			}
		case KindSymlink:
			links = append(links, e)
		default:
			if _, ok := byDigest[e.Digest]; !ok {
				order = append(order, e.Digest)
			}
			byDigest[e.Digest] = append(byDigest[e.Digest], e)
		}
	}
	for _, d := range order {
		if err := ctx.Err(); err != nil {
			return err
		}
		keys, err := writeContent(ctx, w.blobs, r, d, byDigest[d])
		if err != nil {
			return err
		}
		w.stored[d] = struct{}{}
		for i, e := range byDigest[d] {
			index[e.Path] = fileState{key: keys[i], entry: e, racy: isRacy(keys[i], start)}
			hashed++
			hashedBytes += e.Size
		}
	}
	for _, e := range links {
		if err := mkParent(r, e.Path); err != nil {
			return err
		}
		if err := r.Symlink(e.Target, filepath.FromSlash(e.Path)); err != nil {
			return fmt.Errorf("create symlink %q: %w", e.Path, err)
		}
	}
	w.stored[m.Digest()] = struct{}{}
	w.manifest, w.index = m, index
	w.stats = Stats{Scans: 1, Entries: m.Len(), Files: len(index), Hashed: hashed, HashedBytes: hashedBytes}
	return nil
}

func mkParent(r *os.Root, p string) error {
	if dir := path.Dir(p); dir != "." {
		if err := r.MkdirAll(filepath.FromSlash(dir), 0o755); err != nil {
			return fmt.Errorf("create directory %q: %w", dir, err)
		}
	}
	return nil
}
