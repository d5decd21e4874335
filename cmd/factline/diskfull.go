package main

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"time"
)

// spaceWatch is the embedded server's logger for 'run --store': it keeps
// nothing of the server's log but the first write that failed for want
// of disk space. A disk filled before JetStream's own limit is reached
// neither refuses writes nor disables JetStream: the stream that hit it
// logs "no space left on device" and stores nothing more, acknowledging
// nothing, until the server restarts. This is where a follower learns why.
type spaceWatch struct {
	dir  string                 // the store directory (absolute)
	line atomic.Pointer[string] // the first such log line
}

// noSpace is what the server's write error says (ENOSPC).
var noSpace = syscall.ENOSPC.Error()

// Errorf keeps the first error line that says the disk is full.
func (w *spaceWatch) Errorf(format string, v ...any) {
	if line := fmt.Sprintf(format, v...); strings.Contains(line, noSpace) {
		w.line.CompareAndSwap(nil, &line)
	}
}

// The server's other lines are dropped, as with no logger at all.
func (w *spaceWatch) Noticef(string, ...any) {}
func (w *spaceWatch) Warnf(string, ...any)   {}
func (w *spaceWatch) Fatalf(string, ...any)  {}
func (w *spaceWatch) Debugf(string, ...any)  {}
func (w *spaceWatch) Tracef(string, ...any)  {}

// diskFullError says that the disk under a store is full, and what the
// server said when it could not write.
type diskFullError struct {
	dir    string
	free   string // what statfs says is free, "" when it cannot say
	server string // the server's log line
}

func (e *diskFullError) Error() string {
	free := ""
	if e.free != "" {
		free = ", " + e.free + " free"
	}
	return fmt.Sprintf("the disk holding the store %s is full%s: the embedded JetStream server could not write (%s) and stores nothing more until it restarts",
		e.dir, free, e.server)
}

// remedy says how to go on after a full disk under a store.
func (e *diskFullError) remedy() string {
	return fmt.Sprintf("Free space on that disk (df -h %s; JetStream's files are under %s), then run the same command again: "+
		"the server restarts on the store and the suite goes on from there (docs/operations.md#a-full-disk)",
		shellWord(e.dir), shellWord(filepath.Join(e.dir, "jetstream")))
}

// watchDisk stops a suite's follower (stop, with a *diskFullError) once
// the embedded server logged a write that failed for want of space and
// no fact has come for storeIdle since.
func watchDisk(ctx context.Context, w *spaceWatch, lastFact *atomic.Int64, stop context.CancelCauseFunc) {
	everyUntil(ctx, storeIdle/4, func() bool {
		line := w.line.Load()
		if line == nil || time.Since(time.Unix(0, lastFact.Load())) < storeIdle {
			return true
		}
		stop(&diskFullError{dir: w.dir, free: freeSpace(w.dir), server: *line})
		return false
	})
}

// freeSpace says how much of the disk holding dir an unprivileged writer
// may still use ("" when statfs cannot say).
func freeSpace(dir string) string {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return ""
	}
	return byteSize(uint64(st.Bavail) * uint64(st.Bsize))
}

// byteSize writes n bytes for a person: 0 B, 512 B, 3.2 MB, 1.5 GB.
func byteSize(n uint64) string {
	const unit = 1000
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := uint64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %cB", float64(n)/float64(div), "kMGTPE"[exp])
}
