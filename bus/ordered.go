package bus

import (
	"context"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// orderedIdle is how long the server keeps an ordered consumer nobody pulls
// from. The client's default is five minutes, long enough for a busy fleet
// (a read per ended run, a control watch per run) to reach the server's
// limit of consumers per stream with ones no one uses any more.
const orderedIdle = 30 * time.Second

// dropOrdered deletes an ordered consumer once its reader is done with it,
// so that finished reads do not count against the stream's consumer limit
// until they time out. Failure is harmless: the server drops it after
// orderedIdle.
func (b *Bus) dropOrdered(stream string, cons jetstream.Consumer) {
	info := cons.CachedInfo()
	if info == nil || info.Name == "" {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), replyTimeout)
	defer cancel()
	_ = b.js.DeleteConsumer(ctx, stream, info.Name)
}
