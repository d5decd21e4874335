package integration

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"

	"github.com/factline/factline/bus"
	"github.com/factline/factline/bus/bustest"
)

// startLagCluster starts a three-node cluster whose third node is reached
// by the other two only through a proxy in front of its route port (which
// it advertises), and dials nobody itself: dropping the proxy cuts n3 off,
// and n3's replica of FACTS falls behind what n1 and n2 acknowledge while
// n3 keeps answering its own clients' direct gets. The stream's leader is
// kept off n3. It returns a bus on n1, a bus on n3 alone, the proxy and n3.
func startLagCluster(t *testing.T) (w, r *bus.Bus, f *bustest.Proxy, n3 *bus.Embedded) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ports := freePorts(t, 3)
	f = bustest.StartProxy(t, fmt.Sprintf("127.0.0.1:%d", ports[2]), nil)
	var routes []string
	for _, p := range ports[:2] {
		routes = append(routes, fmt.Sprintf("nats-route://127.0.0.1:%d", p))
	}
	routes = append(routes, "nats-route://"+f.URL()[len("nats://"):])
	var nodes []*bus.Embedded
	for i, p := range ports {
		cl := &bus.ClusterConfig{Name: "factline-lag", Listen: fmt.Sprintf("127.0.0.1:%d", p), Routes: routes}
		if i == 2 {
			// n3 dials nobody, and is dialled through the proxy alone.
			cl.Routes, cl.Advertise = nil, f.URL()[len("nats://"):]
		}
		srv, err := bus.StartEmbedded(ctx, bus.EmbeddedConfig{
			StoreDir: t.TempDir(), Durability: bus.SyncInterval, Listen: "127.0.0.1:-1", Name: fmt.Sprintf("n%d", i+1), Cluster: cl,
		})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(srv.Shutdown)
		nodes = append(nodes, srv)
		if i == 1 {
			// n3 comes last, when n1 and n2 know each other already: then
			// nobody tells it a route address it would dial itself, past
			// the proxy, and every route of n3 is one the proxy carries.
			waitRoutes(t, srv, 1)
		}
	}
	dial := func(url string) *bus.Bus {
		var b *bus.Bus
		var err error
		for range 60 {
			attempt, stop := context.WithTimeout(ctx, 3*time.Second)
			// This node only: a reader that moved to another would not
			// read the lagging replica.
			b, err = bus.Dial(attempt, url, bus.Config{Replicas: 3}, nats.IgnoreDiscoveredServers())
			stop()
			if err == nil {
				t.Cleanup(b.Conn().Close)
				return b
			}
			time.Sleep(200 * time.Millisecond)
		}
		t.Fatalf("open a replicated bus on %s: %v", url, err)
		return nil
	}
	w = dial(nodes[0].ClientURL())
	for range 100 {
		info, err := w.JetStream().Stream(ctx, bus.FactsStream)
		if err != nil {
			t.Fatal(err)
		}
		cl := info.CachedInfo().Cluster
		if cl.Leader != "" && cl.Leader != "n3" && len(cl.Replicas) == 2 && cl.Replicas[0].Current && cl.Replicas[1].Current {
			waitDirect(t, nodes[2])
			return w, dial(nodes[2].ClientURL()), f, nodes[2]
		}
		if cl.Leader == "n3" {
			if _, err := w.Conn().Request("$JS.API.STREAM.LEADER.STEPDOWN."+bus.FactsStream, nil, 5*time.Second); err != nil {
				t.Logf("step down: %v", err)
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatal("FACTS found no leader off n3 with both followers current")
	return nil, nil, nil, nil
}

// A reader connected to a node whose replica of FACTS lags what the others
// acknowledged must not take the lagging replica's older end of a run for
// the run: LoadRun returns every acknowledged fact, or fails (the leader
// out of its reach), never a short log. The replica is made to lag on
// purpose: its routes to the other two are cut while the run is written,
// and its direct gets answer from the store it has; then it rejoins and
// catches up while the reader reads.
func TestReadsOnALaggingReplica(t *testing.T) {
	w, r, f, lagNode := startLagCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	// Appended by Commit, which reloads and decides again on a conflict:
	// once n3 is cut off, the leader now and then refuses a sequential
	// writer's append with "wrong last sequence" although nothing else
	// wrote (seen on nats-server 2.15.2).
	appendN := func(from uint64, n int) {
		for p := from; p < from+uint64(n); p++ {
			_, err := w.Commit(ctx, nil, "s", "r", func(log bus.RunLog) ([]bus.Pending, error) {
				if log.NextPosition() != p {
					return nil, nil // in already
				}
				return []bus.Pending{{Fact: bustest.Turn(t, "s", "r", p, uint32(p))}}, nil
			})
			if err != nil {
				t.Fatal(err)
			}
		}
	}
	appendN(1, 4)
	// The reader's replica has the run's first facts.
	deadline := time.Now().Add(20 * time.Second)
	for {
		log, err := r.LoadRun(ctx, "s", "r")
		if err == nil && len(log.Records) == 4 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("before the lag the reader loads %d facts (%v), want 4", len(log.Records), err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	f.Drop()
	waitRoutes(t, lagNode, 0)
	appendN(5, 36)
	rctx, rcancel := context.WithTimeout(ctx, 10*time.Second)
	log, err := r.LoadRun(rctx, "s", "r")
	rcancel()
	if err == nil && len(log.Records) != 40 {
		t.Fatalf("a reader on the lagging replica loaded %d of the run's 40 acknowledged facts", len(log.Records))
	}
	if err != nil && !bus.Transient(err) {
		t.Fatalf("cut off from the leader, the reader failed for good: %v", err)
	}
	t.Logf("cut off from the leader: %v", err)
	// Whole again, n3 catching up: a read may fail (transiently: a
	// handler tries again) while n3 finds the leader again, but one that
	// answers holds every fact.
	f.Heal()
	deadline = time.Now().Add(30 * time.Second)
	for {
		log, err := r.LoadRun(ctx, "s", "r")
		if err == nil {
			if len(log.Records) != 40 {
				t.Fatalf("while the lagging node caught up, the reader loaded %d of 40 facts", len(log.Records))
			}
			break
		}
		if !bus.Transient(err) {
			t.Fatalf("while the lagging node rejoined, the reader failed for good: %v", err)
		}
		if time.Now().After(deadline) {
			t.Fatalf("after the lagging node rejoined, the reader still fails: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// waitRoutes waits until node has n routes (counting the connections of
// a route pool as one route per remote server).
func waitRoutes(t *testing.T, node *bus.Embedded, n int) {
	t.Helper()
	for range 200 {
		rz, err := node.Server().Routez(nil)
		if err != nil {
			t.Fatal(err)
		}
		remotes := map[string]bool{}
		for _, r := range rz.Routes {
			remotes[r.RemoteID] = true
		}
		if len(remotes) == n {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("%s never had %d routes", node.Server().Name(), n)
}

// waitDirect waits until node answers direct gets on FACTS itself: a
// follower subscribes to them only once it is current, looked at every
// two seconds.
func waitDirect(t *testing.T, node *bus.Embedded) {
	t.Helper()
	for range 300 {
		sz, err := node.Server().Subsz(&server.SubszOptions{Subscriptions: true, Test: "$JS.API.DIRECT.GET." + bus.FactsStream, Limit: 100})
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range sz.Subs {
			if s.Subject == "$JS.API.DIRECT.GET."+bus.FactsStream {
				return
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatal("the follower never answered direct gets")
}
