package bus

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/factline/factline/internal/bytecache"
)

// Names of the streams and buckets factline uses.
const (
	FactsStream     = "FACTS"
	ControlStream   = "CONTROL"
	DeadStream      = "DEAD"
	BlobBucket      = "BLOBS"
	PositionsBucket = "POSITIONS"
	deadPrefix      = "dead"
)

// rebuiltCacheBytes bounds the blobs rebuilt from deltas a bus keeps.
const rebuiltCacheBytes = 8 << 20

// Config holds the stream settings Open ensures.
type Config struct {
	// Replicas of FACTS, DEAD and the buckets: 1 on a single server, 3 on a
	// three-node cluster.
	Replicas int
	// DedupWindow is how long JetStream remembers message IDs (default 2m).
	DedupWindow time.Duration
	// ControlMaxAge bounds how long control signals and status live
	// (default 10m).
	ControlMaxAge time.Duration
	// Logger receives the bus's own log lines (default slog.Default()).
	Logger *slog.Logger
	// Faults injects delivery faults (drills and tests only).
	Faults Faults
	// CompressFacts creates FACTS storing its sealed blocks S2-compressed
	// (see CompressFacts); an existing stream is left as it is.
	CompressFacts bool
	// AtomicBatchesOnOneReplica commits a decision of several facts as
	// one atomic batch on a FACTS of one replica on file too, where it is
	// slower than appending them one at a time (see AppendBatch); for
	// tests of batches on a single server.
	AtomicBatchesOnOneReplica bool
}

func (c *Config) defaults() {
	if c.Replicas <= 0 {
		c.Replicas = 1
	}
	if c.DedupWindow <= 0 {
		c.DedupWindow = 2 * time.Minute
	}
	if c.ControlMaxAge <= 0 {
		c.ControlMaxAge = 10 * time.Minute
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
}

// Bus is a connection to factline's streams. It is safe for concurrent use.
type Bus struct {
	nc        *nats.Conn
	js        jetstream.JetStream
	cfg       Config
	log       *slog.Logger
	blobs     jetstream.ObjectStore
	pos       jetstream.KeyValue
	responses responsesBucket // the response cache (CACHE), opened on first use
	// limits is the LIMITS bucket (slots.go).
	limits jetstream.KeyValue
	// faults records the delivery faults injected so far.
	faults faultState
	// replies carries the answers to the bus's direct gets (see replyMux).
	replies *replyMux
	// health is what the bus has seen of the bus itself failing.
	health health
	// kick asks keepStreams to look at the streams again.
	kick chan struct{}
	// closed ends keepStreams (Close).
	closed    chan struct{}
	closeOnce sync.Once
	// ownsConn: Dial made nc, so Close closes it.
	ownsConn bool
	// rebuilt keeps the blobs last rebuilt from deltas, so that a reader
	// going through a run's turns in order (the viewer, an audit) follows
	// one delta a turn instead of the whole chain each time (see
	// readBlob). Every entry was checked against its digest when it was
	// rebuilt.
	rebuilt *bytecache.Cache
	// storedWakes says FACTS republishes stop decisions once stored
	// (wake.go); a stream made before it did not.
	storedWakes atomic.Bool
	// atomic says FACTS takes atomic batches (batch.go); a stream made
	// before factline asked for them, or on a server without them, does not.
	atomic atomic.Bool
}

// Open ensures the streams and buckets exist with the expected settings and
// returns a Bus over nc. The caller keeps ownership of nc.
func Open(ctx context.Context, nc *nats.Conn, cfg Config) (*Bus, error) {
	cfg.defaults()
	zeroAppendCounters()
	// An async publish whose acknowledgement was lost with a stream leader
	// fails after replyTimeout instead of waiting as long as its caller.
	js, err := jetstream.New(nc, jetstream.WithPublishAsyncTimeout(replyTimeout))
	if err != nil {
		return nil, fmt.Errorf("open bus: %w", err)
	}
	b := &Bus{nc: nc, js: js, cfg: cfg, log: cfg.Logger, replies: newReplyMux(nc), kick: make(chan struct{}, 1), closed: make(chan struct{}),
		rebuilt: bytecache.New(rebuiltCacheBytes, rebuiltCacheBytes/4)}
	if err := b.ensure(ctx); err != nil {
		return nil, fmt.Errorf("open bus: %w", b.whyUnopened(ctx, err))
	}
	// The listener is registered here, not in the keeper, so that a
	// reconnect before the keeper first runs is not missed.
	status := nc.StatusChanged(nats.CONNECTED, nats.CLOSED)
	goKeep(func() { b.keepStreams(status) })
	return b, nil
}

// errClosed is a use of a bus after Close.
var errClosed = errors.New("bus: closed")

// Close ends the bus's own work on its connection: the stream keeper
// stops and the subscription its direct gets share is given back. A bus
// Dial made also closes its connection; one Open made leaves it to the
// caller, who owns it. Close may be called more than once.
func (b *Bus) Close() {
	b.closeOnce.Do(func() {
		close(b.closed)
		b.replies.stop()
		if b.ownsConn {
			b.nc.Close()
		}
	})
}

// Conn returns the underlying connection.
func (b *Bus) Conn() *nats.Conn { return b.nc }

// factHeadroom is room left in a message for what an append adds to the
// encoded fact: its headers (message ID, the expected sequence and its
// subject filter, the link to the run's previous message) and the server's
// own framing, with ample margin (a fact's subject and IDs are short).
const factHeadroom = 4 << 10

// defaultMaxPayload is the server's default limit on one message, for a
// connection that has not yet been told its server's.
const defaultMaxPayload = 1 << 20

// FactRoom is the most bytes an encoded fact may take and still be
// appended: the maximum payload the connected server announced, less
// room for the append's headers. It follows the server (a reconnect to a
// server with another limit changes it), so a writer asks for it when it
// makes a large fact rather than keeping it.
func (b *Bus) FactRoom() int {
	max := b.nc.MaxPayload()
	if max <= 0 {
		max = defaultMaxPayload
	}
	return int(max) - factHeadroom
}

// JetStream returns the JetStream context, for tests and baselines.
func (b *Bus) JetStream() jetstream.JetStream { return b.js }

// Dial connects to a NATS server or cluster by URL (comma-separated for
// several seeds) and opens the bus on it. The bus owns the connection:
// Close closes it (as b.Conn().Close() does).
func Dial(ctx context.Context, url string, cfg Config, opts ...nats.Option) (*Bus, error) {
	opts = append([]nats.Option{nats.Name("factline"), nats.MaxReconnects(-1)}, opts...)
	nc, err := nats.Connect(url, opts...)
	if err != nil {
		return nil, fmt.Errorf("connect %s: %w", url, err)
	}
	b, err := Open(ctx, nc, cfg)
	if err != nil {
		nc.Close()
		return nil, err
	}
	b.ownsConn = true
	return b, nil
}
