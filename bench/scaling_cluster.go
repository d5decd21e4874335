package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/factline/factline/bus"
)

// scalingNodes is the size of the loopback cluster the scaling benchmark
// runs on: the three nodes ops/nats describes.
const scalingNodes = 3

// partitionRoot is the first subject token of the facts of configuration
// n (n streams). Each configuration has a root of its own, so that all of
// them live on one cluster at once and are measured interleaved.
func partitionRoot(n int) string { return fmt.Sprintf("s%d", n) }

// partitionStream names stream i of configuration n.
func partitionStream(n, i int) string { return fmt.Sprintf("SCALE%d-%d", n, i) }

// mappingsConf is a nats-server configuration whose subject mappings
// partition every configuration of more than one stream by a hash of the
// suite token: s<n>.<suite>.<run>.<kind>.<kind> becomes
// p<n>.<partition>.<suite>.<run>.<kind>.<kind>, the partition being
// nats-server's own deterministic hash of the suite modulo n. Writers
// publish to the unmapped subject, as factline's writers would.
func mappingsConf(partitions []int) string {
	var b strings.Builder
	b.WriteString("mappings = {\n")
	for _, n := range partitions {
		if n < 2 {
			continue
		}
		fmt.Fprintf(&b, "  %q: %q\n", partitionRoot(n)+".*.*.*.*",
			fmt.Sprintf("p%d.{{partition(%d,1)}}.{{wildcard(1)}}.{{wildcard(2)}}.{{wildcard(3)}}.{{wildcard(4)}}", n, n))
	}
	b.WriteString("}\n")
	return b.String()
}

// startScalingCluster starts three embedded JetStream servers clustered on
// loopback with the given durability and the partition mappings, and
// returns them once a client can make streams.
func startScalingCluster(ctx context.Context, dir string, mode bus.Durability, partitions []int) ([]*bus.Embedded, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	conf := filepath.Join(dir, "mappings.conf")
	if err := os.WriteFile(conf, []byte(mappingsConf(partitions)), 0o644); err != nil {
		return nil, err
	}
	ports, err := freeLoopbackPorts(scalingNodes)
	if err != nil {
		return nil, err
	}
	var routes []string
	for _, p := range ports {
		routes = append(routes, fmt.Sprintf("nats-route://127.0.0.1:%d", p))
	}
	var nodes []*bus.Embedded
	stop := func() {
		for _, n := range nodes {
			n.Shutdown()
		}
	}
	for i, p := range ports {
		srv, err := bus.StartEmbedded(ctx, bus.EmbeddedConfig{
			StoreDir: filepath.Join(dir, fmt.Sprintf("n%d", i+1)), Durability: mode, Listen: "127.0.0.1:-1",
			Name: fmt.Sprintf("%s-n%d", mode, i+1), ConfigFile: conf,
			Cluster: &bus.ClusterConfig{Name: "scale-" + string(mode), Listen: fmt.Sprintf("127.0.0.1:%d", p), Routes: routes},
		})
		if err != nil {
			stop()
			return nil, fmt.Errorf("node %d: %w", i+1, err)
		}
		nodes = append(nodes, srv)
	}
	return nodes, nil
}

// freeLoopbackPorts reserves n loopback ports and releases them for the
// servers' cluster listeners.
func freeLoopbackPorts(n int) ([]int, error) {
	var out []int
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("reserve a loopback port: %w", err)
		}
		ls = append(ls, l)
		out = append(out, l.Addr().(*net.TCPAddr).Port)
	}
	return out, nil
}

// makePartitions (re)creates configuration n's streams, R3 as factline's
// FACTS is on a cluster, each taking its own partition of the mapped
// subjects and storing them under the unmapped ones (a subject transform),
// so that every reader's filter and every writer's expected-sequence
// filter keep naming s<n>.<suite>.<run>.>. Stream i's leader is then
// moved to node i mod 3, so that n streams use min(n, 3) leaders.
func makePartitions(ctx context.Context, js jetstream.JetStream, nc *nats.Conn, nodes []*bus.Embedded, n int) ([]string, error) {
	var leaders []string
	for i := range n {
		name := partitionStream(n, i)
		_ = js.DeleteStream(ctx, name)
		cfg := jetstream.StreamConfig{Name: name, Storage: jetstream.FileStorage, Replicas: scalingNodes,
			Duplicates: 2 * time.Minute}
		if n == 1 {
			cfg.Subjects = []string{partitionRoot(n) + ".>"}
		} else {
			src := fmt.Sprintf("p%d.%d.>", n, i)
			cfg.Subjects = []string{src}
			cfg.SubjectTransform = &jetstream.SubjectTransformConfig{Source: src, Destination: partitionRoot(n) + ".>"}
		}
		if _, err := js.CreateStream(ctx, cfg); err != nil {
			return nil, fmt.Errorf("create %s: %w", name, err)
		}
		want := nodes[i%len(nodes)].Server().Name()
		got, err := placeLeader(ctx, js, nc, name, want)
		if err != nil {
			return nil, err
		}
		leaders = append(leaders, got)
	}
	return leaders, nil
}

// placeLeader asks the stream's leader to step down in favour of want
// (the stepdown request's preferred placement) until want leads, and
// returns the leader it ends with.
func placeLeader(ctx context.Context, js jetstream.JetStream, nc *nats.Conn, stream, want string) (string, error) {
	req, _ := json.Marshal(map[string]any{"placement": map[string]string{"preferred": want}})
	leader := ""
	for attempt := 0; attempt < 20; attempt++ {
		s, err := js.Stream(ctx, stream)
		if err == nil && s.CachedInfo().Cluster != nil {
			leader = s.CachedInfo().Cluster.Leader
		}
		if leader == want {
			return leader, nil
		}
		if leader != "" {
			if _, err := nc.RequestWithContext(ctx, "$JS.API.STREAM.LEADER.STEPDOWN."+stream, req); err != nil {
				return leader, fmt.Errorf("stream %s: step down for %s: %w", stream, want, err)
			}
		}
		select {
		case <-ctx.Done():
			return leader, ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
	return leader, fmt.Errorf("stream %s: leader %q, not %s, after 20 stepdowns", stream, leader, want)
}
