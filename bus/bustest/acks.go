package bustest

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/factline/factline/bus"
)

// Acks is what the instances of a consumer answer the server about their
// deliveries (acks, naks, terms, progress), as the server receives them,
// read on a connection of its own: a test of a hand-back reads what was
// sent, a delay included, not what the sender meant to send.
type Acks struct {
	sub *nats.Subscription
}

// WatchAcks starts reading the answers to consumer's deliveries on FACTS
// (every consumer's when consumer is ""), from now on.
func WatchAcks(tb testing.TB, srv *bus.Embedded, consumer string) *Acks {
	tb.Helper()
	nc, err := srv.Connect()
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(nc.Close)
	subject := "$JS.ACK.>"
	if consumer != "" {
		subject = "$JS.ACK." + bus.FactsStream + "." + consumer + ".>"
	}
	sub, err := nc.SubscribeSync(subject)
	if err != nil {
		tb.Fatal(err)
	}
	// Subscribed at the server before anything the test does next.
	if err := nc.Flush(); err != nil {
		tb.Fatal(err)
	}
	return &Acks{sub: sub}
}

// Naks returns the bodies of the next n naks ("-NAK", or "-NAK" with the
// delay asked for), passing over every other answer; the test fails when
// one does not come within wait of the one before.
func (a *Acks) Naks(tb testing.TB, n int, wait time.Duration) []string {
	tb.Helper()
	var naks []string
	for len(naks) < n {
		m, err := a.sub.NextMsg(wait)
		if err != nil {
			tb.Fatalf("%d naks, want %d: %v", len(naks), n, err)
		}
		if strings.HasPrefix(string(m.Data), "-NAK") {
			naks = append(naks, string(m.Data))
		}
	}
	return naks
}

// Pulling waits until consumer on FACTS has at least n pulls waiting at the
// server: the instances a test started are ready to take what is handed
// back. The deadline only guards against a hang.
func Pulling(tb testing.TB, ctx context.Context, b *bus.Bus, consumer string, n int) {
	tb.Helper()
	waitConsumer(tb, ctx, b, consumer, fmt.Sprintf("had %d pulls waiting", n), func(info *jetstream.ConsumerInfo) bool {
		return info.NumWaiting >= n
	})
}
