package spans

import (
	"crypto/sha256"

	"github.com/oklog/ulid/v2"
)

// traceOf is the trace a fact roots: its ULID's 16 bytes are the trace
// ID, so an operator holding a run.requested's ID holds its trace's ID
// (and a ULID is never zero, which W3C forbids).
func traceOf(id ulid.ULID) TraceID { return TraceID(id) }

// spanOf is the ID of the span of the given role that the fact id opens.
// One fact may open two spans (turn.started opens the turn and its model
// call), so the role is hashed in with the ID; a hash rather than a slice
// of the ULID, whose low bytes are monotonic within a millisecond and
// whose high bytes are the time.
func spanOf(id ulid.ULID, role string) SpanID {
	h := sha256.New()
	h.Write(id[:])
	h.Write([]byte(role))
	var s SpanID
	copy(s[:], h.Sum(nil))
	if s.IsZero() {
		s[7] = 1 // a zero span ID is invalid; 2^-64, but never emit one
	}
	return s
}
