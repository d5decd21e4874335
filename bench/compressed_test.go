package bench

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/factline/factline/bus"
	"github.com/factline/factline/bus/bustest"
)

// The compressed-disk figure is what a server with compression on stores:
// compressedRatio, on a store without it, predicts the size of the block
// that a store with it seals from the same messages, within what cannot be
// predicted: the two stores' records differ in their timestamps, 8 bytes a
// record that no compressor can share between the two.
func TestCompressedRatioIsWhatACompressingServerStores(t *testing.T) {
	fill := func(compress bool) string {
		store := t.TempDir()
		srv := bustest.Server(t, bus.EmbeddedConfig{StoreDir: store, Durability: bus.SyncInterval})
		b := bustest.OpenWith(t, srv, bus.Config{CompressFacts: compress})
		if _, _, err := compressedRatio(store); err == nil {
			t.Fatal("a ratio of a stream without a fact")
		}
		js := b.JetStream()
		for i := range 5000 {
			data := bytes.Repeat(fmt.Appendf(nil, "fact %d, much like the others; ", i), 60)
			if _, err := js.PublishMsgAsync(&nats.Msg{Subject: fmt.Sprintf("fact.s.r%d.turn.completed", i%50), Data: data}); err != nil {
				t.Fatal(err)
			}
			if i%500 == 499 {
				select { // a bounded window of unacknowledged publishes
				case <-js.PublishAsyncComplete():
				case <-time.After(time.Minute):
					t.Fatal("publishes unacknowledged for a minute")
				}
			}
		}
		return store
	}
	plain := fill(false)
	ratio, sealed, err := compressedRatio(plain)
	if err != nil || !sealed {
		t.Fatalf("ratio of a stream of several blocks: sealed %v, %v", sealed, err)
	}
	packed := fill(true)
	first := func(store string) string {
		m, _ := filepath.Glob(filepath.Join(store, "jetstream", "*", "streams", bus.FactsStream, "msgs", "1.blk"))
		if len(m) != 1 {
			t.Fatalf("first block of %s: %v", store, m)
		}
		return m[0]
	}
	var got int64
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if data, err := os.ReadFile(first(packed)); err == nil && bytes.HasPrefix(data, []byte("cmp")) {
			got = int64(len(data))
			break
		}
	}
	if got == 0 {
		t.Fatal("the compressing server never compressed its first block")
	}
	st, err := os.Stat(first(plain))
	if err != nil {
		t.Fatal(err)
	}
	// Every record holds at least the message's data, so this bounds the
	// records in the block from above.
	records := st.Size() / int64(len(bytes.Repeat([]byte("fact 0, much like the others; "), 60)))
	if want := int64(ratio * float64(st.Size())); want < got-8*records || want > got+8*records {
		t.Fatalf("predicted %d bytes for the sealed block (ratio %.3f of %d), the compressing server stored %d", want, ratio, st.Size(), got)
	}
	if ratio <= 0 || ratio >= 0.5 {
		t.Fatalf("ratio %.3f for highly repetitive facts", ratio)
	}
}

// A stream whose facts all fit in its first block still has a figure:
// that block, compressed as it stands, marked as not sealed (B2's suite
// came to fit one block once its facts shrank, and the row vanished).
func TestCompressedRatioOfAStreamOfOneBlock(t *testing.T) {
	store := t.TempDir()
	srv := bustest.Server(t, bus.EmbeddedConfig{StoreDir: store, Durability: bus.SyncInterval})
	js := bustest.OpenWith(t, srv, bus.Config{}).JetStream()
	for i := range 100 {
		data := bytes.Repeat(fmt.Appendf(nil, "fact %d, much like the others; ", i), 20)
		if _, err := js.Publish(t.Context(), fmt.Sprintf("fact.s.r%d.turn.completed", i%5), data); err != nil {
			t.Fatal(err)
		}
	}
	ratio, sealed, err := compressedRatio(store)
	if err != nil {
		t.Fatal(err)
	}
	if sealed {
		t.Fatal("100 small facts reported as sealed blocks")
	}
	if ratio <= 0 || ratio >= 0.5 {
		t.Fatalf("ratio %.3f for one block of highly repetitive facts", ratio)
	}
}
