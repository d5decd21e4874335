package bus

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/nats-io/nats.go/jetstream"
)

// The 503 a clustered node answers without a meta leader is told from
// other refusals by its code, and the error that explains it still
// matches both the lookup's own error and ErrNoMetaLeader, so that a
// caller may tell it from a refusal or a missing stream.
func TestNoMetaLeaderIsToldByItsCodeAndMatchesBoth(t *testing.T) {
	unavailable := &jetstream.APIError{Code: 503, ErrorCode: 10008, Description: "JetStream system temporarily unavailable"}
	lookup := fmt.Errorf("look up stream FACTS: %w", unavailable)
	if !noMetaLeaderAnswer(lookup) {
		t.Errorf("%v is not taken for a cluster without a meta leader", lookup)
	}
	for _, other := range []error{
		fmt.Errorf("look up stream FACTS: %w", &jetstream.APIError{Code: 503, ErrorCode: jetstream.JSErrCodeJetStreamNotEnabledForAccount, Description: "jetstream not enabled for account"}),
		fmt.Errorf("look up stream FACTS: %w", context.DeadlineExceeded),
		jetstream.ErrStreamNotFound,
	} {
		if noMetaLeaderAnswer(other) {
			t.Errorf("%v is taken for a cluster without a meta leader", other)
		}
	}
	e := error(&noMetaLeaderError{err: lookup, cluster: "c", server: "node n1 at nats://127.0.0.1:4222", known: "nats://127.0.0.1:4222", answered: true})
	if !errors.Is(e, ErrNoMetaLeader) || !errors.Is(e, unavailable) {
		t.Errorf("%v matches ErrNoMetaLeader %v and its lookup's error %v", e, errors.Is(e, ErrNoMetaLeader), errors.Is(e, unavailable))
	}
}
