package bus_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/factline/factline/bus"
	"github.com/factline/factline/bus/bustest"
)

// fillFirstBlock publishes enough repetitive messages on fact subjects to
// fill FACTS' first 8 MiB block and seal it (a block is compressed when it
// is sealed), and returns a body by message number.
func fillFirstBlock(t *testing.T, ctx context.Context, b *bus.Bus) func(int) []byte {
	t.Helper()
	body := func(i int) []byte {
		return bytes.Repeat(fmt.Appendf(nil, "fact %d of a run that says much the same every turn; ", i), 40)
	}
	js := b.JetStream()
	for i := range 5000 {
		if _, err := js.PublishMsgAsync(&nats.Msg{Subject: fmt.Sprintf("fact.s.r%d.turn.completed", i%50), Data: body(i)}); err != nil {
			t.Fatal(err)
		}
		if i%500 == 499 {
			// A bounded window of unacknowledged publishes.
			select {
			case <-js.PublishAsyncComplete():
			case <-ctx.Done():
				t.Fatal(ctx.Err())
			}
		}
	}
	return body
}

// firstBlockCompressed waits until FACTS' first block file is the
// server's compressed form (it starts with the compression header) and
// returns its size on disk; 0 if it stays uncompressed.
func firstBlockCompressed(t *testing.T, store string, wait time.Duration) int {
	t.Helper()
	path := filepath.Join(store, "jetstream", "*", "streams", bus.FactsStream, "msgs", "1.blk")
	for deadline := time.Now().Add(wait); ; time.Sleep(50 * time.Millisecond) {
		blocks, _ := filepath.Glob(path)
		if len(blocks) == 1 {
			if data, err := os.ReadFile(blocks[0]); err == nil && bytes.HasPrefix(data, []byte("cmp")) {
				return len(data)
			}
		}
		if time.Now().After(deadline) {
			return 0
		}
	}
}

// A FACTS created with CompressFacts (factline setup --compress on a new
// server) stores its sealed blocks compressed, much smaller than what they
// hold, and every message in them reads back unchanged.
func TestCompressedFactsAreSmallerOnDiskAndReadTheSame(t *testing.T) {
	ctx := testCtx(t)
	store := t.TempDir()
	srv := bustest.Server(t, bus.EmbeddedConfig{StoreDir: store, Durability: bus.SyncInterval})
	b := bustest.OpenWith(t, srv, bus.Config{CompressFacts: true})
	body := fillFirstBlock(t, ctx, b)
	size := firstBlockCompressed(t, store, 30*time.Second)
	if size == 0 {
		t.Fatal("the first sealed block was never stored compressed")
	}
	if size > 2<<20 {
		t.Fatalf("the compressed first block is %d bytes on disk, want well under its 8 MiB", size)
	}
	s, err := b.JetStream().Stream(ctx, bus.FactsStream)
	if err != nil {
		t.Fatal(err)
	}
	for _, seq := range []uint64{1, 777, 3000} {
		m, err := s.GetMsg(ctx, seq)
		if err != nil {
			t.Fatalf("read %d from a compressed block: %v", seq, err)
		}
		if !bytes.Equal(m.Data, body(int(seq-1))) {
			t.Fatalf("message %d reads back different from a compressed block", seq)
		}
	}
}

// Compression set on an existing FACTS (factline setup --compress) is a
// change of its configuration that the server applies once it opens the
// store again: after a restart, the blocks it seals are compressed. A
// stream opened without the setting keeps it, and setting it again
// changes nothing.
func TestCompressionSetOnAnExistingStreamTakesEffectAfterARestart(t *testing.T) {
	ctx := testCtx(t)
	r := bustest.StartRestartable(t)
	b := r.Dial(ctx)
	if changed, err := b.CompressFacts(ctx, true); err != nil || !changed {
		t.Fatalf("compress: changed %v, %v", changed, err)
	}
	if changed, err := b.CompressFacts(ctx, true); err != nil || changed {
		t.Fatalf("compress again: changed %v, %v; want nothing to change", changed, err)
	}
	b.Conn().Close()
	r.Restart()
	b = bustest.OpenWith(t, r.Server, bus.Config{})
	s, err := b.JetStream().Stream(ctx, bus.FactsStream)
	if err != nil {
		t.Fatal(err)
	}
	if c := s.CachedInfo().Config.Compression; c != jetstream.S2Compression {
		t.Fatalf("a bus opened without the setting changed the stream's compression to %s", c)
	}
	fillFirstBlock(t, ctx, b)
	if firstBlockCompressed(t, r.Config.StoreDir, 30*time.Second) == 0 {
		t.Fatal("after the restart the first sealed block was not stored compressed")
	}
}
