package workspace

import (
	"context"
	"fmt"
	"path"
	"strings"
	"time"

	"github.com/factline/factline/events"
)

// Blobs is a content-addressed blob store; a bus's Blobs() satisfies it.
// Put must be idempotent and return the digest of the bytes; Get returns
// the bytes named by a digest (the workspace checks them again).
type Blobs interface {
	Put(ctx context.Context, data []byte) (events.Digest, error)
	Get(ctx context.Context, d events.Digest) ([]byte, error)
}

// Default bounds of a workspace.
const (
	// DefaultMaxEntries is the default bound on the entries of a tree.
	DefaultMaxEntries = 100_000
	// DefaultMaxBytes is the default bound on a tree's file content: 1 GiB.
	DefaultMaxBytes = 1 << 30
)

// RacyWindow is how close to the start of the scan that recorded it a file's
// mtime or ctime may be before its recorded stat is distrusted: a write in
// the same timestamp tick as the recording can leave size and times
// unchanged, so such files are rehashed by the next scan even when their stat
// looks the same. Two seconds covers the coarsest common timestamps (FAT).
const RacyWindow = 2 * time.Second

// Options tune how a tree is scanned. The zero value has no ignore patterns
// and the default bounds.
type Options struct {
	// Ignore lists glob patterns (path.Match syntax) of paths to leave out.
	// A pattern without "/" is matched against the last element of every
	// path at any depth ("*.o", "node_modules"); a pattern with "/" is
	// matched against the whole slash-separated relative path ("build/*.log").
	// A matched directory is left out with everything below it. Patterns
	// must not be empty or start or end with "/".
	Ignore []string
	// MaxEntries bounds the number of entries (files, symlinks and empty
	// directories); 0 means DefaultMaxEntries.
	MaxEntries int
	// MaxBytes bounds the total size of the files; 0 means DefaultMaxBytes.
	MaxBytes int64

	now func() time.Time // the clock, for tests; nil means time.Now
}

// normalised checks the options and fills in defaults.
func (o Options) normalised() (Options, error) {
	if o.MaxEntries < 0 || o.MaxBytes < 0 {
		return o, fmt.Errorf("workspace options: negative bounds (max entries %d, max bytes %d)", o.MaxEntries, o.MaxBytes)
	}
	if o.MaxEntries == 0 {
		o.MaxEntries = DefaultMaxEntries
	}
	if o.MaxBytes == 0 {
		o.MaxBytes = DefaultMaxBytes
	}
	if o.now == nil {
		o.now = time.Now
	}
	for _, p := range o.Ignore {
		if p == "" || strings.HasPrefix(p, "/") || strings.HasSuffix(p, "/") {
			return o, fmt.Errorf("workspace options: ignore pattern %q must be non-empty and not start or end with \"/\"", p)
		}
		if _, err := path.Match(p, ""); err != nil {
			return o, fmt.Errorf("workspace options: ignore pattern %q: %w", p, err)
		}
	}
	return o, nil
}

// ignored returns the pattern that leaves rel out, if any.
func (o Options) ignored(rel string) (string, bool) {
	base := path.Base(rel)
	for _, p := range o.Ignore {
		subject := base
		if strings.Contains(p, "/") {
			subject = rel
		}
		if ok, _ := path.Match(p, subject); ok {
			return p, true
		}
	}
	return "", false
}

// ignoredBelow returns the pattern that leaves rel or one of its parent
// directories out, if any.
func (o Options) ignoredBelow(rel string) (string, bool) {
	if len(o.Ignore) == 0 {
		return "", false
	}
	for i := 0; i <= len(rel); i++ {
		if i == len(rel) || rel[i] == '/' {
			if p, ok := o.ignored(rel[:i]); ok {
				return p, true
			}
		}
	}
	return "", false
}

func tooMany(root string, max int) error {
	return &LimitError{Root: root, Bound: BoundEntries, Max: int64(max)}
}

func tooBig(root string, max int64) error {
	return &LimitError{Root: root, Bound: BoundBytes, Max: max}
}
