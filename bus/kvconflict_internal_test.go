package bus

import (
	"errors"
	"fmt"
	"testing"

	"github.com/nats-io/nats.go/jetstream"
)

// A replicated bucket reports a lost conditional write with code 10164,
// which the client passes on unmapped when a create retries over a deleted
// key; a standalone one with 10071. Both are a slot someone else took, not
// a failure (TestFaultRollingRestart ended a run errored on "take
// ....c.2: wrong last sequence" before this rule knew the first).
func TestAKeyValueWriteThatLostARaceIsAConflictOnEveryServer(t *testing.T) {
	for name, err := range map[string]error{
		"client's key exists":         jetstream.ErrKeyExists,
		"client's revision mismatch":  jetstream.ErrKeyRevisionMismatch,
		"standalone wrong last seq":   &jetstream.APIError{Code: 400, ErrorCode: jetstream.JSErrCodeStreamWrongLastSequence},
		"replicated wrong last seq":   &jetstream.APIError{Code: 400, ErrorCode: jetstream.JSErrCodeStreamWrongLastSequenceConstant},
		"wrapped replicated conflict": fmt.Errorf("update: %w", &jetstream.APIError{Code: 400, ErrorCode: jetstream.JSErrCodeStreamWrongLastSequenceConstant}),
	} {
		if !kvConflict(err) {
			t.Errorf("%s: not a conflict", name)
		}
	}
	for name, err := range map[string]error{
		"timeout":          errors.New("nats: timeout"),
		"stream not found": &jetstream.APIError{Code: 404, ErrorCode: jetstream.JSErrCodeStreamNotFound},
	} {
		if kvConflict(err) {
			t.Errorf("%s: taken for a conflict", name)
		}
	}
}
