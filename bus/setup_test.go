package bus_test

import (
	"bytes"
	"context"
	"errors"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/factline/factline/bus"
	"github.com/factline/factline/bus/bustest"
	"github.com/factline/factline/events"
)

// Opening twice is harmless; a FACTS stream someone made with settings that
// change what the log means is reported, not silently altered.
func TestOpenIsIdempotentAndReportsMismatch(t *testing.T) {
	ctx := testCtx(t)
	b, srv := bustest.Start(t)
	if _, err := bus.Open(ctx, b.Conn(), bus.Config{}); err != nil {
		t.Fatalf("second open: %v", err)
	}

	nc, err := srv.Connect()
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	if err := js.DeleteStream(ctx, bus.FactsStream); err != nil {
		t.Fatal(err)
	}
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: bus.FactsStream, Subjects: []string{"fact.>"}, Storage: jetstream.MemoryStorage}); err != nil {
		t.Fatal(err)
	}
	_, err = bus.Open(ctx, nc, bus.Config{})
	var mm *bus.ConfigMismatchError
	if !errors.As(err, &mm) || mm.Stream != bus.FactsStream || mm.Field != "storage" {
		t.Fatalf("open over a memory FACTS stream: %v", err)
	}
	info, _ := js.Stream(ctx, bus.FactsStream)
	if info.CachedInfo().Config.Storage != jetstream.MemoryStorage {
		t.Fatal("open changed the existing stream")
	}
}

func TestBlobsByDigest(t *testing.T) {
	ctx := testCtx(t)
	b, _ := bustest.Start(t)
	data := bytes.Repeat([]byte("workspace snapshot "), 100_000) // ~1.9 MB, several chunks
	d, err := b.Blobs().Put(ctx, data)
	if err != nil {
		t.Fatal(err)
	}
	if d != events.DigestOf(data) {
		t.Fatalf("digest %s, want %s", d, events.DigestOf(data))
	}
	if d2, err := b.Blobs().Put(ctx, data); err != nil || d2 != d {
		t.Fatalf("second put: %s, %v", d2, err)
	}
	got, err := b.Blobs().Get(ctx, d)
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("get: %d bytes, %v", len(got), err)
	}
	if _, err := b.Blobs().Get(ctx, events.DigestOf([]byte("nope"))); !errors.Is(err, bus.ErrBlobNotFound) {
		t.Fatalf("missing blob: %v", err)
	}
	if _, err := b.Blobs().Get(ctx, "sha256:zz"); err == nil {
		t.Fatal("malformed digest accepted")
	}
}

func TestPositions(t *testing.T) {
	ctx := testCtx(t)
	b, _ := bustest.Start(t)
	if p, err := b.LoadPosition(ctx, "history"); err != nil || p != 0 {
		t.Fatalf("fresh position: %d, %v", p, err)
	}
	if err := b.SavePosition(ctx, "history", 42); err != nil {
		t.Fatal(err)
	}
	if p, err := b.LoadPosition(ctx, "history"); err != nil || p != 42 {
		t.Fatalf("saved position: %d, %v", p, err)
	}
	if err := b.SavePosition(ctx, "bad.name", 1); !errors.Is(err, events.ErrBadToken) {
		t.Fatalf("bad name: %v", err)
	}
}

// The log survives a restart of the embedded server on the same store.
func TestFactsSurviveRestart(t *testing.T) {
	ctx := testCtx(t)
	dir := t.TempDir()
	start := func() (*bus.Bus, *bus.Embedded) {
		srv, err := bus.StartEmbedded(ctx, bus.EmbeddedConfig{StoreDir: dir})
		if err != nil {
			t.Fatal(err)
		}
		nc, err := srv.Connect()
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(nc.Close)
		b, err := bus.Open(ctx, nc, bus.Config{})
		if err != nil {
			t.Fatal(err)
		}
		return b, srv
	}
	b, srv := start()
	if srv.Durability() != bus.SyncAlways {
		t.Fatalf("default durability is %q, want %q", srv.Durability(), bus.SyncAlways)
	}
	appendRun(t, b, "s", "r1", 1, 3, bus.Expect{})
	srv.Shutdown()
	b2, srv2 := start()
	defer srv2.Shutdown()
	log, err := b2.LoadRun(ctx, "s", "r1")
	if err != nil || len(log.Records) != 3 {
		t.Fatalf("after restart: %d facts, %v", len(log.Records), err)
	}
}

func TestEmbeddedConfigErrors(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := bus.StartEmbedded(ctx, bus.EmbeddedConfig{}); err == nil {
		t.Fatal("no store dir accepted")
	}
	if _, err := bus.StartEmbedded(ctx, bus.EmbeddedConfig{StoreDir: t.TempDir(), Durability: "sometimes"}); err == nil {
		t.Fatal("unknown durability accepted")
	}
	if _, err := bus.ParseDurability("never"); err == nil {
		t.Fatal("ParseDurability accepted nonsense")
	}
}

// A TCP listener on loopback serves external clients.
func TestEmbeddedListensOnLoopback(t *testing.T) {
	_, srv := bustest.StartWith(t, bus.EmbeddedConfig{Durability: bus.SyncInterval, Listen: "127.0.0.1:-1"})
	url := srv.ClientURL()
	if url == "" || !bytes.Contains([]byte(url), []byte("127.0.0.1")) {
		t.Fatalf("client URL %q", url)
	}
	ctx := testCtx(t)
	b, err := bus.Dial(ctx, url, bus.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Conn().Close()
	if _, err := b.Append(ctx, bus.Expect{}, bus.Pending{Fact: bustest.Claim(t, "s", "r1", 1)}); err != nil {
		t.Fatal(err)
	}
}

// A FACTS stream someone made with a limit that removes old messages (a
// max age, a per-subject or stream-wide count, a byte size with discard
// old) loses acknowledged facts without a word, deny_delete or not: the
// server enforces limits, not deletes. Opening it is refused naming the
// limit. A size limit with discard new refuses writes instead, the full
// store factline reports (docs/operations.md#a-full-store), so it opens.
func TestOpenRefusesAFactsStreamWhoseLimitsDropFacts(t *testing.T) {
	ctx := testCtx(t)
	_, srv := bustest.Start(t)
	nc, err := srv.Connect()
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	base := func() jetstream.StreamConfig {
		return jetstream.StreamConfig{Name: bus.FactsStream, Subjects: []string{"fact.>"}, Storage: jetstream.FileStorage,
			Retention: jetstream.LimitsPolicy, Duplicates: 2 * time.Minute, AllowDirect: true, DenyDelete: true, DenyPurge: true}
	}
	remake := func(cfg jetstream.StreamConfig) {
		t.Helper()
		if err := js.DeleteStream(ctx, bus.FactsStream); err != nil {
			t.Fatal(err)
		}
		if _, err := js.CreateStream(ctx, cfg); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		field string
		set   func(*jetstream.StreamConfig)
	}{
		{"max_age", func(c *jetstream.StreamConfig) { c.MaxAge = time.Hour }},
		{"max_msgs_per_subject", func(c *jetstream.StreamConfig) { c.MaxMsgsPerSubject = 5 }},
		{"max_msgs", func(c *jetstream.StreamConfig) { c.MaxMsgs = 1000 }},
		{"max_bytes", func(c *jetstream.StreamConfig) { c.MaxBytes = 1 << 20 }},
	} {
		cfg := base()
		c.set(&cfg)
		remake(cfg)
		_, err := bus.Open(ctx, nc, bus.Config{})
		var mm *bus.ConfigMismatchError
		if !errors.As(err, &mm) || mm.Stream != bus.FactsStream || mm.Field != c.field {
			t.Fatalf("open over a FACTS stream with %s: %v", c.field, err)
		}
	}
	cfg := base()
	cfg.MaxBytes, cfg.Discard = 1<<20, jetstream.DiscardNew
	remake(cfg)
	if _, err := bus.Open(ctx, nc, bus.Config{}); err != nil {
		t.Fatalf("open over a FACTS stream that refuses writes when full: %v", err)
	}
}
