package integration

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/factline/factline/bus"
	"github.com/factline/factline/internal/testutil"
)

// A process that makes the streams on a cluster with one replica — every
// command's default, and what docs/operations.md's cluster commands did
// before they named --replicas — keeps the log on one node, lost with
// it, and no factline command can change it after. It says so when it
// makes each stream, naming the cluster and the fix; on a single server
// it says nothing.
func TestStreamsMadeWithOneReplicaOnAClusterAreWarnedOf(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	ports := freePorts(t, 3)
	var routes []string
	for _, p := range ports {
		routes = append(routes, fmt.Sprintf("nats-route://127.0.0.1:%d", p))
	}
	var urls []string
	for i, p := range ports {
		srv, err := bus.StartEmbedded(ctx, bus.EmbeddedConfig{
			StoreDir: t.TempDir(), Durability: bus.SyncInterval, Listen: "127.0.0.1:-1", Name: fmt.Sprintf("n%d", i+1),
			Cluster: &bus.ClusterConfig{Name: "factline-test", Listen: fmt.Sprintf("127.0.0.1:%d", p), Routes: routes},
		})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(srv.Shutdown)
		urls = append(urls, srv.ClientURL())
	}
	var logs testutil.LogBuffer
	logger := slog.New(slog.NewTextHandler(&logs, nil))
	var b *bus.Bus
	var err error
	for range 30 { // JetStream needs its meta leader before streams can be made
		attempt, stop := context.WithTimeout(ctx, 3*time.Second)
		b, err = bus.Dial(attempt, strings.Join(urls, ","), bus.Config{Logger: logger})
		stop()
		if err == nil {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	if err != nil {
		t.Fatalf("open the bus on the cluster: %v", err)
	}
	defer b.Conn().Close()
	got := logs.String()
	for _, want := range []string{"level=WARN", "stream=FACTS", "replicas=1", "cluster=factline-test", "--replicas 3"} {
		if !strings.Contains(got, want) {
			t.Errorf("the log does not say %q:\n%s", want, got)
		}
	}

	// One server alone: one replica is all there can be.
	single, err := bus.StartEmbedded(ctx, bus.EmbeddedConfig{StoreDir: t.TempDir(), Durability: bus.SyncInterval, Listen: "127.0.0.1:-1"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(single.Shutdown)
	var quiet testutil.LogBuffer
	sb, err := bus.Dial(ctx, single.ClientURL(), bus.Config{Logger: slog.New(slog.NewTextHandler(&quiet, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer sb.Conn().Close()
	if strings.Contains(quiet.String(), "replica") {
		t.Errorf("on a single server the bus warns of replicas:\n%s", quiet.String())
	}
}
