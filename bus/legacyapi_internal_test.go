package bus

import (
	"fmt"
	"testing"

	"github.com/nats-io/nats.go"
)

// A JetStream API error as nats.go's legacy API returns it is the same
// answer as the jetstream package's, of another type: KV watches (which
// list a model limit's slots) and push subscriptions make their consumers
// through that API. A 503 "JetStream system temporarily unavailable"
// while a cluster replaces a node is the bus failing, not the work, and a
// refusal for want of space is a full store. Before, only the jetstream
// package's type was recognised: a run waiting for a model slot while a
// node was SIGKILLed ended errored ("harness: waiting for a model slot:
// limit scripted: list …: nats: JetStream system temporarily
// unavailable", chaos seed 109).
func TestLegacyAPIErrorsAreClassifiedAsJetStreamsAre(t *testing.T) {
	for _, c := range []struct {
		err             *nats.APIError
		transient, full bool
	}{
		{&nats.APIError{Code: 503, ErrorCode: nats.JSErrCodeJetStreamNotAvailable, Description: "JetStream system temporarily unavailable"}, true, false},
		{&nats.APIError{Code: 404, ErrorCode: nats.JSErrCodeStreamNotFound, Description: "stream not found"}, true, false},
		{&nats.APIError{Code: 503, ErrorCode: nats.JSErrCodeJetStreamNotEnabled, Description: "JetStream not enabled"}, true, false},
		{&nats.APIError{Code: 500, ErrorCode: nats.JSErrCodeInsufficientResourcesErr, Description: "insufficient resources"}, true, true},
		{&nats.APIError{Code: 400, ErrorCode: nats.JSErrCodeBadRequest, Description: "bad request"}, false, false},
	} {
		err := fmt.Errorf("limit scripted: list m1.r: %w", c.err)
		if got := Transient(err); got != c.transient {
			t.Errorf("Transient(%v) = %v, want %v", err, got, c.transient)
		}
		if got := StoreFull(err); got != c.full {
			t.Errorf("StoreFull(%v) = %v, want %v", err, got, c.full)
		}
	}
}
