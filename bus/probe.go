package bus

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// ProbePublish asks whether this connection may publish on subject,
// storing nothing: it publishes expecting a last subject sequence no
// subject can have, which a stream that takes the subject refuses to store
// (and says so). It returns nil once a stream answered, an error matching
// ErrStreamMissing when no stream stores the subject, or the publish's
// error. A subject the server denies gets no answer at all: only the
// permission violation the server reports on the connection says so, and
// the caller watches for it while the probe waits (ctx bounds the wait).
func (b *Bus) ProbePublish(ctx context.Context, subject string) error {
	m := &nats.Msg{Subject: subject, Header: nats.Header{}}
	m.Header.Set(jetstream.ExpectedLastSubjSeqHeader, strconv.FormatUint(math.MaxUint64, 10))
	_, err := b.js.PublishMsg(ctx, m)
	var api *jetstream.APIError
	switch {
	case err == nil, errors.As(err, &api):
		return nil
	case errors.Is(err, jetstream.ErrNoStreamResponse):
		return fmt.Errorf("%w: none stores %s: %w", ErrStreamMissing, subject, err)
	}
	return fmt.Errorf("probe publish: %w", err)
}
