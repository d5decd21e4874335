package integration

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/factline/factline/bus"
	"github.com/factline/factline/events"
	"github.com/factline/factline/fleet"
	"github.com/factline/factline/services/kit"
	"github.com/factline/factline/services/runner"
)

// freePorts reserves n loopback ports for servers a test starts later
// on them. They are taken below the kernel's ephemeral range: a port
// from it, closed again until its server binds it, may meanwhile become
// the local port of any outgoing connection (the tests run in parallel
// make many) or of another test's listener on port 0, and the server
// then fails with "address already in use", as a cluster test did beside
// the parallel tests. A port below the range is given out by no
// connection and no listener on port 0; this gives each out once per test
// process, from a random start so that test processes running at once
// seldom meet, and passes over one something else holds.
func freePorts(t *testing.T, n int) []int {
	t.Helper()
	var out []int
	for len(out) < n {
		p := int(nextPort.Add(1))
		if p >= portsEnd {
			t.Fatalf("no free loopback port left below %d", portsEnd)
		}
		l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", p))
		if err != nil {
			continue
		}
		l.Close()
		out = append(out, p)
	}
	return out
}

// The ports freePorts gives out: [portsStart, portsEnd), below Linux's
// default ephemeral range (32768-60999).
const portsStart, portsEnd = 20000, 32768

// nextPort is the last port freePorts gave out.
var nextPort = func() *atomic.Int32 {
	var p atomic.Int32
	p.Store(int32(portsStart + rand.IntN((portsEnd-portsStart)/2)))
	return &p
}()

// startCluster starts three embedded JetStream servers clustered on
// loopback and opens the bus with three replicas, through a client that
// knows every node.
func startCluster(t *testing.T) (*bus.Bus, []*bus.Embedded) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ports := freePorts(t, 3)
	var routes []string
	for _, p := range ports {
		routes = append(routes, fmt.Sprintf("nats-route://127.0.0.1:%d", p))
	}
	var nodes []*bus.Embedded
	for i, p := range ports {
		srv, err := bus.StartEmbedded(ctx, bus.EmbeddedConfig{
			StoreDir: t.TempDir(), Durability: bus.SyncInterval, Listen: "127.0.0.1:-1", Name: fmt.Sprintf("n%d", i+1),
			Cluster: &bus.ClusterConfig{Name: "factline-test", Listen: fmt.Sprintf("127.0.0.1:%d", p), Routes: routes},
		})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(srv.Shutdown)
		nodes = append(nodes, srv)
	}
	url := nodes[0].ClientURL() + "," + nodes[1].ClientURL() + "," + nodes[2].ClientURL()
	// JetStream needs its meta leader before streams can be made.
	var b *bus.Bus
	var err error
	for range 30 {
		attempt, stop := context.WithTimeout(ctx, 3*time.Second)
		b, err = bus.Dial(attempt, url, bus.Config{Replicas: 3})
		stop()
		if err == nil {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	if err != nil {
		t.Fatalf("open a replicated bus: %v", err)
	}
	t.Cleanup(b.Conn().Close)
	return b, nodes
}

// A run on a three-node cluster with replicated streams: the services work
// the same, and the log has three replicas.
func TestRunOnAThreeNodeCluster(t *testing.T) {
	t.Parallel()
	b, _ := startCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	runFleet(t, ctx, b, fleet.Options{Services: loopServices, Per: map[string][]kit.Option{fleet.Runner: {runner.WithWorkDir(t.TempDir())}}})
	f := &harness{t: t, b: b, ctx: ctx}
	log, end := f.run("cluster", checkTask("{steps: 4, cost: 12}"), script(fail(1, "5"), turn(write("w", "4"), check("c"), done("t2/c"))))
	invariants(t, log)
	if end.Status != events.RunDone {
		t.Fatalf("ended %s/%q", end.Status, end.Reason)
	}
	info, err := b.JetStream().Stream(ctx, bus.FactsStream)
	if err != nil {
		t.Fatal(err)
	}
	if r := info.CachedInfo().Config.Replicas; r != 3 {
		t.Fatalf("FACTS has %d replicas, want 3", r)
	}
	if n := len(info.CachedInfo().Cluster.Replicas); n != 2 {
		t.Fatalf("FACTS has %d followers, want 2", n)
	}
}
