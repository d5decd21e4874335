package integration

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/factline/factline/internal/testutil"
)

// The chaos campaign's cluster: three nats-server processes on loopback,
// each a node a test SIGKILLs or SIGTERMs and starts again on its store,
// as an operator's supervisor would. nats-server is built from the module
// factline already depends on (github.com/nats-io/nats-server/v2), so the
// nodes are the very server a deployment runs, configured by a file as
// ops/nats/node*.conf are.

var (
	natsServerOnce sync.Once
	natsServerPath string
	natsServerErr  error
)

// natsServerBinary builds nats-server once for the tests that run it.
func natsServerBinary(t *testing.T) string {
	t.Helper()
	natsServerOnce.Do(func() {
		dir, err := os.MkdirTemp("", "factline-nats-server-")
		if err != nil {
			natsServerErr = err
			return
		}
		natsServerPath = filepath.Join(dir, "nats-server")
		out, err := exec.Command("go", "build", "-o", natsServerPath, "github.com/nats-io/nats-server/v2").CombinedOutput()
		if err != nil {
			natsServerErr = fmt.Errorf("go build nats-server: %v\n%s", err, out)
		}
	})
	if natsServerErr != nil {
		t.Fatal(natsServerErr)
	}
	return natsServerPath
}

// natsNode is one nats-server process of a cluster, on fixed ports and a
// store of its own.
type natsNode struct {
	name                  string
	conf                  string
	client, route, health int // loopback ports
	logs                  *testutil.LogBuffer

	mu     sync.Mutex
	cmd    *exec.Cmd
	exited chan struct{}
	starts int
}

// natsCluster is three nodes with R3 JetStream.
type natsCluster struct {
	t     *testing.T
	bin   string
	nodes []*natsNode
}

// startNatsCluster starts three clustered nodes. maxStore, when not
// empty, caps each node's JetStream file store (a full store is then a
// matter of filling it). The cluster does not advertise its nodes to
// clients: a client knows only the URLs it was given, so one that reaches
// the cluster through proxies stays behind them when it reconnects.
func startNatsCluster(t *testing.T, maxStore string) *natsCluster {
	t.Helper()
	c := newNatsCluster(t, maxStore)
	for _, n := range c.nodes {
		if err := c.start(n); err != nil {
			t.Fatal(err)
		}
	}
	return c
}

// newNatsCluster writes the configuration of three clustered nodes, as
// startNatsCluster does, and starts none of them: a test starts those it
// wants up. Every node started is stopped when the test ends.
func newNatsCluster(t *testing.T, maxStore string) *natsCluster {
	t.Helper()
	c := &natsCluster{t: t, bin: natsServerBinary(t)}
	ports := freePorts(t, 9)
	var routes []string
	for i := range 3 {
		routes = append(routes, fmt.Sprintf("nats-route://127.0.0.1:%d", ports[3+i]))
	}
	for i := range 3 {
		n := &natsNode{name: fmt.Sprintf("n%d", i+1), client: ports[i], route: ports[3+i], health: ports[6+i], logs: &testutil.LogBuffer{}}
		dir := t.TempDir()
		limit := ""
		if maxStore != "" {
			limit = "\n  max_file_store: " + maxStore
		}
		conf := fmt.Sprintf(`server_name: %s
listen: 127.0.0.1:%d
http: 127.0.0.1:%d
jetstream {
  store_dir: %q
  sync_interval: "1s"%s
}
cluster {
  name: factline-chaos
  listen: 127.0.0.1:%d
  no_advertise: true
  routes: [%s]
}
`, n.name, n.client, n.health, filepath.Join(dir, "store"), limit, n.route, strings.Join(routes, ", "))
		n.conf = filepath.Join(dir, "node.conf")
		if err := os.WriteFile(n.conf, []byte(conf), 0o644); err != nil {
			t.Fatal(err)
		}
		c.nodes = append(c.nodes, n)
	}
	t.Cleanup(func() {
		for _, n := range c.nodes {
			c.stop(n, syscall.SIGTERM)
		}
		if t.Failed() {
			for _, n := range c.nodes {
				t.Logf("nats-server %s (%d starts), last lines:\n%s", n.name, n.starts, lastLines(n.logs.String(), 60))
			}
		}
	})
	return c
}

// addrs are the nodes' client addresses (host:port).
func (c *natsCluster) addrs() []string {
	var out []string
	for _, n := range c.nodes {
		out = append(out, fmt.Sprintf("127.0.0.1:%d", n.client))
	}
	return out
}

// url lists every node, as a client of the whole cluster is given.
func (c *natsCluster) url() string {
	var out []string
	for _, a := range c.addrs() {
		out = append(out, "nats://"+a)
	}
	return strings.Join(out, ",")
}

// start runs the node's server and waits until it takes clients.
func (c *natsCluster) start(n *natsNode) error {
	n.mu.Lock()
	cmd := exec.Command(c.bin, "-c", n.conf)
	cmd.Stdout, cmd.Stderr = n.logs, n.logs
	if err := cmd.Start(); err != nil {
		n.mu.Unlock()
		return fmt.Errorf("start nats-server %s: %w", n.name, err)
	}
	n.starts++
	fmt.Fprintf(n.logs, "--- start %d, pid %d ---\n", n.starts, cmd.Process.Pid)
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	n.cmd, n.exited = cmd, exited
	n.mu.Unlock()
	deadline := time.Now().Add(30 * time.Second)
	for {
		if conn, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", n.client)); err == nil {
			conn.Close()
			return nil
		}
		select {
		case <-exited:
			return fmt.Errorf("nats-server %s exited at start:\n%s", n.name, lastLines(n.logs.String(), 30))
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("nats-server %s took no client within 30s", n.name)
		}
	}
}

// stop signals the node's server and waits for it to exit (SIGKILL after
// 30 s).
func (c *natsCluster) stop(n *natsNode, sig syscall.Signal) {
	n.mu.Lock()
	cmd, exited := n.cmd, n.exited
	n.cmd = nil
	n.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Signal(sig)
	select {
	case <-exited:
	case <-time.After(30 * time.Second):
		_ = cmd.Process.Kill()
		<-exited
	}
}

// healthy waits until the node answers /healthz with 200: its JetStream
// assets are current with the rest of the cluster, so that the next node
// of a rolling restart may go.
func (c *natsCluster) healthy(ctx context.Context, n *natsNode) error {
	url := fmt.Sprintf("http://127.0.0.1:%d/healthz", n.health)
	var last string
	for {
		rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		req, _ := http.NewRequestWithContext(rctx, http.MethodGet, url, nil)
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			var body [512]byte
			k, _ := resp.Body.Read(body[:])
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				cancel()
				return nil
			}
			last = fmt.Sprintf("%d %s", resp.StatusCode, body[:k])
		} else {
			last = err.Error()
		}
		cancel()
		select {
		case <-ctx.Done():
			return fmt.Errorf("nats-server %s never became healthy: %s", n.name, last)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// restart stops the node with sig, starts it again on its store after
// pause, and waits until it is healthy.
func (c *natsCluster) restart(ctx context.Context, n *natsNode, sig syscall.Signal, pause time.Duration) error {
	c.stop(n, sig)
	time.Sleep(pause)
	if err := c.start(n); err != nil {
		return err
	}
	return c.healthy(ctx, n)
}
