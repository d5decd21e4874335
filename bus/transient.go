package bus

import (
	"context"
	"errors"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Transient reports whether err is the kind of failure that passes on its
// own: a NATS connection reconnecting, a request timing out while a
// cluster elects a new leader, no responders for a moment. Work that fails
// so should be handed back and tried again, not ended.
func Transient(err error) bool {
	if err == nil {
		return false
	}
	for _, t := range []error{nats.ErrTimeout, nats.ErrNoResponders, nats.ErrDisconnected, nats.ErrConnectionReconnecting,
		jetstream.ErrNoStreamResponse, context.DeadlineExceeded} {
		if errors.Is(err, t) {
			return true
		}
	}
	var apiErr *jetstream.APIError
	if errors.As(err, &apiErr) && apiErr.Code == 503 {
		return true // e.g. JetStream temporarily unavailable during an election
	}
	return false
}
