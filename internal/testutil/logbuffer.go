package testutil

import (
	"bytes"
	"sync"
)

// LogBuffer is a log destination that a test reads while the goroutines
// of the code under test write to it (a slog handler's io.Writer, a
// process's output).
type LogBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

// Write appends p; it is safe for concurrent use.
func (l *LogBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

// String is everything written so far.
func (l *LogBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}
