package workspace

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/factline/factline/events"
)

// statKey is what a scan compares to trust a file's recorded digest without
// reading it. Which fields are filled depends on the platform (keyOf).
type statKey struct {
	size         int64
	mode         fs.FileMode
	mtime, ctime int64 // nanoseconds since the Unix epoch
	ino, dev     uint64
}

// latest is the later of mtime and ctime.
func (k statKey) latest() int64 { return max(k.mtime, k.ctime) }

// isRacy reports whether a file recorded with key by a scan that started at
// start could change again within the same timestamp tick unnoticed.
func isRacy(key statKey, start time.Time) bool {
	return key.latest() >= start.Add(-RacyWindow).UnixNano()
}

// fileState is what a scan remembers of a regular file.
type fileState struct {
	key   statKey
	entry Entry
	// racy is set when the file's mtime or ctime was within RacyWindow of
	// the start of the scan that hashed it: a later write in the same tick
	// could leave the key unchanged, so the next scan rehashes it anyway.
	racy bool
}

// Stats describe the work of a workspace's last scan (Open, Materialise,
// Refresh or Seal), so that callers and tests can see what was reread.
type Stats struct {
	Scans       int   // scans since the workspace was opened, the last included
	Entries     int   // entries in the resulting manifest
	Files       int   // regular files in it
	Hashed      int   // files read and hashed
	HashedBytes int64 // bytes read and hashed
	Racy        int   // files among Hashed whose stat was unchanged but racy
	Reused      int   // files whose recorded digest was trusted from their stat
	BlobsPut    int   // Put calls, the manifest's included
}

// scanner walks a tree once.
type scanner struct {
	ctx    context.Context
	root   string
	opts   Options
	blobs  Blobs
	prev   map[string]fileState
	stored map[events.Digest]struct{} // known to be in the store; read only
	full   bool                       // rehash every file, trusting no stat
	putAll bool                       // put every file blob, known or not

	start   time.Time
	entries []Entry
	index   map[string]fileState
	put     map[events.Digest]struct{} // blobs put by this scan
	bytes   int64
	stats   Stats
}

// scan walks root and returns the sorted entries; s.index, s.put and s.stats
// describe what it saw and did.
func (s *scanner) scan() ([]Entry, error) {
	s.start = s.opts.now()
	s.index = make(map[string]fileState, len(s.prev))
	s.put = make(map[events.Digest]struct{})
	if _, err := s.dir("", s.root); err != nil {
		return nil, err
	}
	slices.SortFunc(s.entries, func(a, b Entry) int { return strings.Compare(a.Path, b.Path) })
	s.stats.Entries = len(s.entries)
	s.stats.Files = len(s.index)
	return s.entries, nil
}

// dir records the entries below the directory rel and returns how many it
// recorded.
func (s *scanner) dir(rel, abs string) (int, error) {
	if err := s.ctx.Err(); err != nil {
		return 0, err
	}
	des, err := os.ReadDir(abs)
	if err != nil {
		return 0, fmt.Errorf("read directory %q: %w", displayRel(rel), err)
	}
	n := 0
	for _, de := range des {
		crel, cabs := de.Name(), filepath.Join(abs, de.Name())
		if rel != "" {
			crel = rel + "/" + crel
		}
		if _, ok := s.opts.ignored(crel); ok {
			continue
		}
		t := de.Type()
		switch {
		case t.IsDir():
			k, err := s.dir(crel, cabs)
			if err != nil {
				return 0, err
			}
			if k == 0 {
				if err := s.add(Entry{Path: crel, Kind: KindDir}); err != nil {
					return 0, err
				}
				k = 1
			}
			n += k
		case t&fs.ModeSymlink != 0:
			target, err := os.Readlink(cabs)
			if err != nil {
				return 0, fmt.Errorf("read symlink %q: %w", crel, err)
			}
			if err := s.add(Entry{Path: crel, Kind: KindSymlink, Size: int64(len(target)), Target: target}); err != nil {
				return 0, err
			}
			n++
		case t.IsRegular():
			fi, err := de.Info()
			if err != nil {
				return 0, fmt.Errorf("stat %q: %w", crel, err)
			}
			if err := s.file(crel, cabs, fi); err != nil {
				return 0, err
			}
			n++
		default:
			return 0, pathErr(crel, ErrUnsupported, "is a %s, which a manifest cannot record (leave it out with Options.Ignore)", typeName(t))
		}
	}
	return n, nil
}

func (s *scanner) add(e Entry) error {
	if len(s.entries) >= s.opts.MaxEntries {
		return tooMany(s.root, s.opts.MaxEntries)
	}
	s.entries = append(s.entries, e)
	return nil
}

// file records a regular file, trusting its recorded digest when its stat
// is unchanged and was not racy, and reading and hashing it otherwise.
func (s *scanner) file(rel, abs string, fi fs.FileInfo) error {
	key := keyOf(fi)
	if p, ok := s.prev[rel]; ok && !s.full && p.key == key {
		if !p.racy {
			if s.bytes += p.entry.Size; s.bytes > s.opts.MaxBytes {
				return tooBig(s.root, s.opts.MaxBytes)
			}
			s.index[rel] = p
			s.stats.Reused++
			return s.add(p.entry)
		}
		s.stats.Racy++
	}
	if s.bytes+fi.Size() > s.opts.MaxBytes {
		return tooBig(s.root, s.opts.MaxBytes)
	}
	if sb, ok := streams(s.blobs); ok && fi.Size() > StreamAbove {
		return s.streamFile(sb, rel, abs)
	}
	data, key, err := readFile(abs, s.opts.MaxBytes-s.bytes)
	if errors.Is(err, ErrTooLarge) {
		return tooBig(s.root, s.opts.MaxBytes)
	}
	if err != nil {
		return fmt.Errorf("read %q: %w", rel, err)
	}
	s.bytes += int64(len(data))
	s.stats.Hashed++
	s.stats.HashedBytes += int64(len(data))
	d := events.DigestOf(data)
	e := Entry{Path: rel, Kind: KindFile, Size: int64(len(data)), Digest: d}
	if key.mode&0o100 != 0 {
		e.Kind = KindExec
	}
	s.index[rel] = fileState{key: key, entry: e, racy: isRacy(key, s.start)}
	if err := s.store(rel, d, data); err != nil {
		return err
	}
	return s.add(e)
}

// streamFile records a large regular file like file does, hashing it and
// storing it as streams so that it is never held in memory.
func (s *scanner) streamFile(sb StreamBlobs, rel, abs string) error {
	d, size, key, err := hashFile(abs, s.opts.MaxBytes-s.bytes)
	if errors.Is(err, ErrTooLarge) {
		return tooBig(s.root, s.opts.MaxBytes)
	}
	if err != nil {
		return fmt.Errorf("read %q: %w", rel, err)
	}
	s.bytes += size
	s.stats.Hashed++
	s.stats.HashedBytes += size
	e := Entry{Path: rel, Kind: KindFile, Size: size, Digest: d}
	if key.mode&0o100 != 0 {
		e.Kind = KindExec
	}
	s.index[rel] = fileState{key: key, entry: e, racy: isRacy(key, s.start)}
	if s.needsPut(d) {
		if err := putFile(s.ctx, sb, abs, d, size); err != nil {
			return fmt.Errorf("store %q: %w", rel, err)
		}
		s.put[d] = struct{}{}
		s.stats.BlobsPut++
	}
	return s.add(e)
}

// needsPut reports whether content d must be put: not when this scan put
// it already, nor when it is known to be stored (unless putAll).
func (s *scanner) needsPut(d events.Digest) bool {
	if _, ok := s.put[d]; ok {
		return false
	}
	_, ok := s.stored[d]
	return !ok || s.putAll
}

// store puts a file's content unless it is known to be stored (or, when
// putAll is set, unless this scan put it already).
func (s *scanner) store(rel string, d events.Digest, data []byte) error {
	if !s.needsPut(d) {
		return nil
	}
	got, err := s.blobs.Put(s.ctx, data)
	if err != nil {
		return fmt.Errorf("store %q: %w", rel, err)
	}
	if got != d {
		return fmt.Errorf("store %q: %w: the store named the content %s, not %s", rel, ErrCorrupt, got, d)
	}
	s.put[d] = struct{}{}
	s.stats.BlobsPut++
	return nil
}

// readFile reads a regular file without following a symlink that replaced
// it, returning its content and the stat taken before reading. More than
// limit bytes is ErrTooLarge.
func readFile(abs string, limit int64) ([]byte, statKey, error) {
	f, err := os.OpenFile(abs, os.O_RDONLY|oNoFollow, 0)
	if err != nil {
		return nil, statKey{}, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, statKey{}, err
	}
	if !fi.Mode().IsRegular() {
		return nil, statKey{}, fmt.Errorf("changed during the scan: now a %s", typeName(fi.Mode().Type()))
	}
	if fi.Size() > limit {
		return nil, statKey{}, ErrTooLarge
	}
	data := make([]byte, fi.Size())
	n, err := io.ReadFull(f, data)
	data = data[:n]
	switch {
	case err == nil:
		// The file may have grown since the stat: read to the end.
		more, err := io.ReadAll(io.LimitReader(f, limit-int64(n)+1))
		if err != nil {
			return nil, statKey{}, err
		}
		data = append(data, more...)
	case errors.Is(err, io.ErrUnexpectedEOF):
		// It shrank: what was read is the content.
	default:
		return nil, statKey{}, err
	}
	if int64(len(data)) > limit {
		return nil, statKey{}, ErrTooLarge
	}
	return data, keyOf(fi), nil
}

func typeName(t fs.FileMode) string {
	switch {
	case t&fs.ModeNamedPipe != 0:
		return "named pipe"
	case t&fs.ModeSocket != 0:
		return "socket"
	case t&fs.ModeCharDevice != 0:
		return "character device"
	case t&fs.ModeDevice != 0:
		return "device"
	case t&fs.ModeSymlink != 0:
		return "symlink"
	case t.IsDir():
		return "directory"
	case t.IsRegular():
		return "regular file"
	}
	return "file of type " + t.String()
}

func displayRel(rel string) string {
	if rel == "" {
		return "."
	}
	return rel
}
