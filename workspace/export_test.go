package workspace

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// WithClock returns o with the scans' clock replaced, so that tests say when
// a scan happens relative to the files' timestamps.
func WithClock(o Options, now func() time.Time) Options {
	o.now = now
	return o
}

// SimulateSameTickWrite makes the recorded stat of rel equal the file's
// current stat, as if the last write to it had landed in the same timestamp
// tick as the scan that recorded it: size, times and inode all look
// unchanged, and only the racy rule can still catch the new content.
func (w *Workspace) SimulateSameTickWrite(rel string) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	st, ok := w.index[rel]
	if !ok {
		return fmt.Errorf("%q is not a recorded file", rel)
	}
	fi, err := os.Lstat(filepath.Join(w.root, filepath.FromSlash(rel)))
	if err != nil {
		return err
	}
	st.key = keyOf(fi)
	w.index[rel] = st
	return nil
}

// RecordIsRacy reports whether the last scan's record of rel is racy.
func (w *Workspace) RecordIsRacy(rel string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.index[rel].racy
}

// RehashAll is Refresh trusting no stat (every file reread and hashed) but
// storing like Refresh: the baseline the incremental rescan is measured
// against.
func (w *Workspace) RehashAll(ctx context.Context) (Change, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.refresh(ctx, true, false)
}
