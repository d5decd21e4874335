package workspace

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"

	"github.com/factline/factline/events"
)

// Revert puts the directory back to the tree of the last successful scan:
// what that tree does not hold is removed, what it holds and the directory
// lost or changed is restored from the store, and what is unchanged is left
// as it is (a file is reread only when its stat changed or was racy, and
// rewritten only when its content or mode differs). Paths the ignore rules
// leave out are not touched.
//
// It is how a caller undoes a change it refuses: after Refresh returns
// ErrTooLarge, Revert takes the tree back within its bounds, so that the
// workspace can still be refreshed and sealed. It rescans at the end and
// fails if the tree is not the last scan's.
func (w *Workspace) Revert(ctx context.Context) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	r, err := os.OpenRoot(w.root)
	if err != nil {
		return fmt.Errorf("revert %s: %w", w.root, err)
	}
	defer r.Close()
	rv := &reverter{ctx: ctx, w: w, r: r, want: map[string]Entry{}, dirs: map[string]bool{}, intact: map[string]bool{}}
	for _, e := range w.manifest.entries {
		rv.want[e.Path] = e
		if e.Kind == KindDir {
			rv.dirs[e.Path] = true
		}
		for dir := path.Dir(e.Path); dir != "."; dir = path.Dir(dir) {
			rv.dirs[dir] = true
		}
	}
	if err := rv.prune(""); err != nil {
		return fmt.Errorf("revert %s: %w", w.root, err)
	}
	if err := rv.restore(); err != nil {
		return fmt.Errorf("revert %s: %w", w.root, err)
	}
	want := w.manifest.Digest()
	if _, err := w.refresh(ctx, false, false); err != nil {
		return fmt.Errorf("revert %s: rescan: %w", w.root, err)
	}
	if got := w.manifest.Digest(); got != want {
		return fmt.Errorf("revert %s: the tree is %s after reverting, not %s (something wrote to it meanwhile)", w.root, got, want)
	}
	return nil
}

// reverter is one Revert.
type reverter struct {
	ctx    context.Context
	w      *Workspace
	r      *os.Root
	want   map[string]Entry // the last scan's entries by path
	dirs   map[string]bool  // directories the last scan's tree has
	intact map[string]bool  // entries found as recorded
}

// prune removes, below the directory rel, everything the last scan's tree
// does not hold as it is on disk, and notes what is intact.
func (v *reverter) prune(rel string) error {
	if err := v.ctx.Err(); err != nil {
		return err
	}
	des, err := os.ReadDir(filepath.Join(v.w.root, filepath.FromSlash(rel)))
	if err != nil {
		return fmt.Errorf("read directory %q: %w", displayRel(rel), err)
	}
	for _, de := range des {
		crel := de.Name()
		if rel != "" {
			crel = rel + "/" + crel
		}
		if _, ok := v.w.opts.ignored(crel); ok {
			continue
		}
		keep, err := v.keep(crel, de.Type())
		if err != nil {
			return err
		}
		if !keep {
			if err := v.r.RemoveAll(filepath.FromSlash(crel)); err != nil {
				return fmt.Errorf("remove %q: %w", crel, err)
			}
		}
	}
	return nil
}

// keep decides whether the entry crel of type t stays, recursing into
// directories that stay.
func (v *reverter) keep(crel string, t fs.FileMode) (bool, error) {
	e, recorded := v.want[crel]
	switch {
	case t.IsDir():
		if !v.dirs[crel] {
			return false, nil
		}
		if recorded {
			v.intact[crel] = true
		}
		return true, v.prune(crel)
	case t&fs.ModeSymlink != 0:
		if !recorded || e.Kind != KindSymlink {
			return false, nil
		}
		target, err := v.r.Readlink(filepath.FromSlash(crel))
		if err != nil || target != e.Target {
			return false, nil
		}
		v.intact[crel] = true
		return true, nil
	case t.IsRegular():
		if !recorded || (e.Kind != KindFile && e.Kind != KindExec) {
			return false, nil
		}
		same, err := v.sameFile(crel, e)
		if err != nil || !same {
			return false, err
		}
		v.intact[crel] = true
		return true, nil
	}
	return false, nil
}

// sameFile reports whether the regular file rel holds entry e: trusted from
// its stat when that is unchanged and was not racy, checked by hashing
// otherwise (without holding the content). A mode that is all that differs
// is set back.
func (v *reverter) sameFile(rel string, e Entry) (bool, error) {
	fi, err := v.r.Lstat(filepath.FromSlash(rel))
	if err != nil {
		return false, nil
	}
	if st, ok := v.w.index[rel]; ok && !st.racy && st.key == keyOf(fi) {
		return true, nil
	}
	if fi.Size() != e.Size {
		return false, nil
	}
	f, err := v.r.OpenFile(filepath.FromSlash(rel), os.O_RDONLY|oNoFollow, 0)
	if err != nil {
		return false, nil
	}
	h := sha256.New()
	_, err = io.Copy(h, io.LimitReader(f, e.Size+1))
	f.Close()
	if err != nil || hex.EncodeToString(h.Sum(nil)) != e.Digest.Hex() {
		return false, nil
	}
	perm := fs.FileMode(0o644)
	if e.Kind == KindExec {
		perm = 0o755
	}
	if fi.Mode().Perm() != perm {
		if err := v.r.Chmod(filepath.FromSlash(rel), perm); err != nil {
			return false, fmt.Errorf("chmod %q: %w", rel, err)
		}
	}
	return true, nil
}

// restore creates every entry of the last scan's tree that is not intact:
// directories, then files (each blob fetched once), then symlinks.
func (v *reverter) restore() error {
	byDigest := map[events.Digest][]Entry{}
	var order []events.Digest
	var links []Entry
	for _, e := range v.w.manifest.entries {
		if v.intact[e.Path] {
			continue
		}
		switch e.Kind {
		case KindDir:
			if err := v.r.MkdirAll(filepath.FromSlash(e.Path), 0o755); err != nil {
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
		if err := v.ctx.Err(); err != nil {
			return err
		}
		if _, err := writeContent(v.ctx, v.w.blobs, v.r, d, byDigest[d]); err != nil {
			return err
		}
	}
	for _, e := range links {
		if err := mkParent(v.r, e.Path); err != nil {
			return err
		}
		if err := v.r.Symlink(e.Target, filepath.FromSlash(e.Path)); err != nil {
			return fmt.Errorf("create symlink %q: %w", e.Path, err)
		}
	}
	return nil
}
