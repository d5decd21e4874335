package workspace

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	"github.com/factline/factline/events"
)

// StreamBlobs is a Blobs that can also move a blob as a stream; a bus's
// Blobs() is one. With it a workspace stores, restores and reverts large files in a
// small constant amount of memory instead of their size.
type StreamBlobs interface {
	Blobs
	// PutFrom stores the size bytes read from r under d, their digest;
	// a blob it has already is not read. Bytes that are not d's are an
	// error and are not kept.
	PutFrom(ctx context.Context, d events.Digest, size int64, r io.Reader) error
	// GetTo writes the blob named by d to w, checking its digest, and
	// returns how many bytes it wrote.
	GetTo(ctx context.Context, d events.Digest, w io.Writer) (int64, error)
}

// StreamAbove is the size above which a file's content is streamed when
// the store is a StreamBlobs: hashed and stored by reading the file twice,
// restored by writing it as it arrives. Smaller files travel as one byte
// slice, which costs fewer round trips.
const StreamAbove = 1 << 20

// streams returns the store as a StreamBlobs when it is one.
func streams(b Blobs) (StreamBlobs, bool) {
	sb, ok := b.(StreamBlobs)
	return sb, ok
}

// hashFile hashes a regular file without holding it and without following
// a symlink that replaced it, returning its digest, size and the stat taken
// before reading. More than limit bytes is ErrTooLarge.
func hashFile(abs string, limit int64) (events.Digest, int64, statKey, error) {
	f, err := os.OpenFile(abs, os.O_RDONLY|oNoFollow, 0)
	if err != nil {
		return "", 0, statKey{}, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return "", 0, statKey{}, err
	}
	if !fi.Mode().IsRegular() {
		return "", 0, statKey{}, fmt.Errorf("changed during the scan: now a %s", typeName(fi.Mode().Type()))
	}
	if fi.Size() > limit {
		return "", 0, statKey{}, ErrTooLarge
	}
	h := sha256.New()
	n, err := io.Copy(h, io.LimitReader(f, limit+1))
	if err != nil {
		return "", 0, statKey{}, err
	}
	if n > limit {
		return "", 0, statKey{}, ErrTooLarge
	}
	return events.Digest("sha256:" + hex.EncodeToString(h.Sum(nil))), n, keyOf(fi), nil
}

// putFile stores the file abs, of size bytes with digest d, as a stream.
func putFile(ctx context.Context, sb StreamBlobs, abs string, d events.Digest, size int64) error {
	f, err := os.OpenFile(abs, os.O_RDONLY|oNoFollow, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	// One byte more than the size, so that a file that grew since it was
	// hashed fails the store's check instead of being cut to fit.
	return sb.PutFrom(ctx, d, size, io.LimitReader(f, size+1))
}

// writeContent writes the blob d into every entry of es (which all name
// it), fetching it once: whole when it is small or the store cannot
// stream, as a stream into the first file otherwise, the others copied
// from that one. It returns each file's stat.
func writeContent(ctx context.Context, blobs Blobs, r *os.Root, d events.Digest, es []Entry) ([]statKey, error) {
	keys := make([]statKey, 0, len(es))
	sb, ok := streams(blobs)
	if !ok || es[0].Size <= StreamAbove {
		data, err := blobs.Get(ctx, d)
		if err != nil {
			return nil, fmt.Errorf("get content of %q: %w", es[0].Path, err)
		}
		if got := events.DigestOf(data); got != d {
			return nil, fmt.Errorf("content of %q: %w: the store returned bytes with digest %s, not %s", es[0].Path, ErrCorrupt, got, d)
		}
		for _, e := range es {
			if int64(len(data)) != e.Size {
				return nil, fmt.Errorf("content of %q: %w: %d bytes, the manifest says %d", e.Path, ErrCorrupt, len(data), e.Size)
			}
			key, err := writeFile(r, e, data)
			if err != nil {
				return nil, err
			}
			keys = append(keys, key)
		}
		return keys, nil
	}
	first := es[0]
	key, err := writeFrom(r, first, func(w io.Writer) error {
		n, err := sb.GetTo(ctx, d, w)
		if err != nil {
			return fmt.Errorf("get content: %w", err)
		}
		if n != first.Size {
			return fmt.Errorf("content: %w: %d bytes, the manifest says %d", ErrCorrupt, n, first.Size)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	keys = append(keys, key)
	for _, e := range es[1:] {
		if e.Size != first.Size {
			return nil, fmt.Errorf("content of %q: %w: %d bytes, the manifest says %d", e.Path, ErrCorrupt, first.Size, e.Size)
		}
		key, err := writeFrom(r, e, func(w io.Writer) error {
			src, err := r.OpenFile(filepath.FromSlash(first.Path), os.O_RDONLY|oNoFollow, 0)
			if err != nil {
				return err
			}
			defer src.Close()
			_, err = io.Copy(w, src)
			return err
		})
		if err != nil {
			return nil, err
		}
		keys = append(keys, key)
	}
	return keys, nil
}

// writeFile creates e with data and its exact mode, returning its stat.
func writeFile(r *os.Root, e Entry, data []byte) (statKey, error) {
	return writeFrom(r, e, func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	})
}

// writeFrom creates e with what fill writes and its exact mode, returning
// its stat. The file must not exist.
func writeFrom(r *os.Root, e Entry, fill func(io.Writer) error) (statKey, error) {
	if err := mkParent(r, e.Path); err != nil {
		return statKey{}, err
	}
	perm := fs.FileMode(0o644)
	if e.Kind == KindExec {
		return writeExec(r, e, fill)
	}
	f, err := r.OpenFile(filepath.FromSlash(e.Path), os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return statKey{}, fmt.Errorf("create %q: %w", e.Path, err)
	}
	err = fill(f)
	if err == nil {
		err = f.Chmod(perm) // exact, whatever the umask
	}
	var fi fs.FileInfo
	if err == nil {
		fi, err = f.Stat()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return statKey{}, fmt.Errorf("write %q: %w", e.Path, err)
	}
	return keyOf(fi), nil
}

// writeExec writes an executable so that no process this one starts can
// inherit a descriptor open for writing on it: a command that runs the
// file at once would otherwise fail with "text file busy" whenever another
// goroutine forked while it was being written. The content goes to a
// private temporary file first (its filling may wait on the network); the
// executable itself is created, copied into and closed while
// syscall.ForkLock keeps every fork out, which the local copy keeps short.
func writeExec(r *os.Root, e Entry, fill func(io.Writer) error) (statKey, error) {
	tmp, err := os.CreateTemp("", "factline-exec-")
	if err != nil {
		return statKey{}, fmt.Errorf("write %q: %w", e.Path, err)
	}
	defer os.Remove(tmp.Name())
	defer tmp.Close()
	if err := fill(tmp); err != nil {
		return statKey{}, fmt.Errorf("write %q: %w", e.Path, err)
	}
	if _, err := tmp.Seek(0, io.SeekStart); err != nil {
		return statKey{}, fmt.Errorf("write %q: %w", e.Path, err)
	}
	syscall.ForkLock.Lock()
	defer syscall.ForkLock.Unlock()
	f, err := r.OpenFile(filepath.FromSlash(e.Path), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o755)
	if err != nil {
		return statKey{}, fmt.Errorf("create %q: %w", e.Path, err)
	}
	_, err = io.Copy(f, tmp)
	if err == nil {
		err = f.Chmod(0o755) // exact, whatever the umask
	}
	var fi fs.FileInfo
	if err == nil {
		fi, err = f.Stat()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return statKey{}, fmt.Errorf("write %q: %w", e.Path, err)
	}
	return keyOf(fi), nil
}
