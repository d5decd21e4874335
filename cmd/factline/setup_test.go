package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/factline/factline/bus"
)

// oldFacts starts a server on loopback whose FACTS stream was made before
// the log was append-only: every setting factline needs but deny_delete
// and deny_purge. It returns the server's URL, the stream and a function
// that stops the server (also called when the test ends).
func oldFacts(t *testing.T, ctx context.Context, store string) (string, jetstream.Stream, func()) {
	t.Helper()
	srv, err := bus.StartEmbedded(ctx, bus.EmbeddedConfig{StoreDir: store, Durability: bus.SyncInterval, Listen: "127.0.0.1:-1"})
	if err != nil {
		t.Fatal(err)
	}
	nc, err := srv.Connect()
	if err != nil {
		srv.Shutdown()
		t.Fatal(err)
	}
	stop := func() { nc.Close(); srv.Shutdown() }
	t.Cleanup(stop)
	js, _ := jetstream.New(nc)
	s, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: bus.FactsStream, Subjects: []string{"fact.>"}, Storage: jetstream.FileStorage,
		Retention: jetstream.LimitsPolicy, Replicas: 1, Duplicates: 2 * time.Minute, AllowDirect: true})
	if err != nil {
		t.Fatal(err)
	}
	return srv.ClientURL(), s, stop
}

// factline setup on a server whose FACTS predates the append-only log says
// so and how to fix it, and changes nothing; with --append-only it adds
// deny_delete and deny_purge, and the next setup has nothing to report.
func TestSetupReportsAndFixesAFactsStreamThatIsNotAppendOnly(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	url, s, _ := oldFacts(t, ctx, t.TempDir())
	denied := func() bool {
		info, err := s.Info(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return info.Config.DenyDelete && info.Config.DenyPurge
	}

	code, out, errOut := runCLI(t, "setup", "--nats", url)
	if code != 0 || !strings.Contains(out, "stream FACTS lacks deny_delete and deny_purge") ||
		!strings.Contains(out, "factline setup --append-only") {
		t.Fatalf("setup over an old FACTS: %d\n%s%s", code, out, errOut)
	}
	if denied() {
		t.Fatal("setup changed the stream without being asked")
	}
	if !strings.Contains(out, "now announces each stop decision once stored") {
		t.Fatalf("setup over an old FACTS did not add the announcement of stored decisions:\n%s", out)
	}
	if info, err := s.Info(ctx); err != nil || info.Config.RePublish == nil || info.Config.RePublish.Destination != "stored.fact.{{wildcard(1)}}.{{wildcard(2)}}.stop.decided" {
		t.Fatalf("FACTS after setup: republish %+v, %v", info.Config.RePublish, err)
	}

	code, out, errOut = runCLI(t, "setup", "--nats", url, "--append-only")
	if code != 0 || !strings.Contains(out, "FACTS is now append-only") || !denied() {
		t.Fatalf("setup --append-only: %d\n%s%s", code, out, errOut)
	}
	code, out, errOut = runCLI(t, "setup", "--nats", url)
	if code != 0 || strings.Contains(out, "lacks") || strings.Contains(out, "announces") || !strings.Contains(out, "are set up") {
		t.Fatalf("setup after --append-only: %d\n%s%s", code, out, errOut)
	}
}

// An embedded store made before the append-only log is fixed the same way:
// factline setup --store DIR --append-only (a store otherwise sets itself
// up, so setup takes --store only with --append-only). The opening command
// reports it until then.
func TestSetupAppendOnlyOnAStore(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	store := t.TempDir()
	_, _, stop := oldFacts(t, ctx, store)
	stop()
	if code, _, errOut := runCLI(t, "setup", "--store", store); code != 2 || !strings.Contains(errOut, "--append-only") {
		t.Fatalf("setup --store without --append-only: %d %s", code, errOut)
	}
	code, out, errOut := runCLI(t, "setup", "--store", store, "--append-only")
	if code != 0 || !strings.Contains(out, "FACTS is now append-only") {
		t.Fatalf("setup --store --append-only: %d\n%s%s", code, out, errOut)
	}
	if cfg := factsConfig(t, ctx, store); !cfg.DenyDelete || !cfg.DenyPurge {
		t.Fatalf("the store's FACTS after setup --append-only: %+v", cfg)
	}
}

// factline setup --compress creates FACTS compressed on a server that has
// none yet; on a store whose FACTS exists it sets the compression and says
// that it applies once the store is opened again; --compress=false turns
// it off.
func TestSetupCompress(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	srv, err := bus.StartEmbedded(ctx, bus.EmbeddedConfig{StoreDir: t.TempDir(), Durability: bus.SyncInterval, Listen: "127.0.0.1:-1"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Shutdown)
	code, out, errOut := runCLI(t, "setup", "--nats", srv.ClientURL(), "--compress")
	if code != 0 || !strings.Contains(out, "stream FACTS stores its sealed blocks S2-compressed") {
		t.Fatalf("setup --compress on a new server: %d\n%s%s", code, out, errOut)
	}

	store := t.TempDir()
	_, s, stop := oldFacts(t, ctx, store)
	if s.CachedInfo().Config.Compression != jetstream.NoCompression {
		t.Fatal("the old FACTS is compressed before setup")
	}
	stop()
	code, out, errOut = runCLI(t, "setup", "--store", store, "--compress")
	if code != 0 || !strings.Contains(out, "is set to store its sealed blocks S2-compressed") || !strings.Contains(out, "opens the store again") {
		t.Fatalf("setup --store --compress on an old store: %d\n%s%s", code, out, errOut)
	}
	if c := factsConfig(t, ctx, store).Compression; c != jetstream.S2Compression {
		t.Fatalf("the store's FACTS after setup --compress: compression %s", c)
	}
	code, out, errOut = runCLI(t, "setup", "--store", store, "--compress=false")
	if code != 0 || !strings.Contains(out, "is set to store its sealed blocks uncompressed") {
		t.Fatalf("setup --compress=false: %d\n%s%s", code, out, errOut)
	}
	if c := factsConfig(t, ctx, store).Compression; c != jetstream.NoCompression {
		t.Fatalf("the store's FACTS after setup --compress=false: compression %s", c)
	}
}

// factsConfig is the configuration of a store's FACTS, read on a server
// started for the call alone.
func factsConfig(t *testing.T, ctx context.Context, store string) jetstream.StreamConfig {
	t.Helper()
	srv, err := bus.StartEmbedded(ctx, bus.EmbeddedConfig{StoreDir: store, Durability: bus.SyncInterval})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Shutdown()
	nc, err := srv.Connect()
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	s, err := js.Stream(ctx, bus.FactsStream)
	if err != nil {
		t.Fatal(err)
	}
	return s.CachedInfo().Config
}
