package integration

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/factline/factline/bus"
	"github.com/factline/factline/events"
	"github.com/factline/factline/fleet"
)

// The bus itself failing under a suite (issue 16): a server restarted, a
// cluster restarted node by node, a store that fills up. Each ends with
// the fault-free report, an audit that holds, one effect per operation at
// the sink, and nothing dead-lettered.

// busFaultAckWait is the services' ack wait in these tests: above how long
// a restart keeps them from sending heartbeats, as the 30 s default is.
const busFaultAckWait = "5s"

// runFollower is `factline run SUITE --nats URL --json` as a process.
type runFollower struct {
	stdout, stderr bytes.Buffer
	err            error
}

// factlineRun runs the suite against url and waits for the command to exit
// (or ctx to end, which kills it).
func factlineRun(t *testing.T, ctx context.Context, url, suite string) *runFollower {
	t.Helper()
	r := &runFollower{}
	cmd := exec.CommandContext(ctx, factlineBinary(t), "run", suite, "--nats", url, "--json")
	cmd.Stdout, cmd.Stderr = &r.stdout, &r.stderr
	r.err = cmd.Run()
	return r
}

// dialFault connects the test to the fleet's server(s), reconnecting for
// ever, as the services do.
func dialFault(t *testing.T, ctx context.Context, url string, cfg bus.Config) *bus.Bus {
	t.Helper()
	b, err := bus.Dial(ctx, url, cfg, nats.ReconnectWait(100*time.Millisecond))
	if err != nil {
		t.Fatalf("connect to %s: %v", url, err)
	}
	t.Cleanup(b.Conn().Close)
	return b
}

// noDeadLetters fails the test if anything was dead-lettered: the bus
// failing is no reason to give up on a message.
func noDeadLetters(t *testing.T, ctx context.Context, b *bus.Bus) {
	t.Helper()
	dead, err := b.DeadLetters(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range dead {
		t.Errorf("dead letter from %s (%s seq %d): %s", d.Consumer, d.Subject, d.StreamSeq, d.Reason)
	}
}

// The standalone server every service process uses is restarted four
// times mid-suite on the same store, twice with SIGTERM and twice with
// SIGKILL, each time starting again half a second later; `factline run` follows the
// suite through both. Before, CONTROL (in memory) vanished with the
// server, every runner's control watch failed with "stream not found",
// burned its five deliveries in under half a second, and dozens of
// attempts ended errored.
func TestFaultServerRestarts(t *testing.T) {
	want := faultFree(t)
	d := startNatsd(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	theSink().reset(nil)
	url := d.url()
	ports := freePorts(t, 3)
	var scrapes []string
	for i, services := range []string{"staller,decider,grader,meter", "runner", "runner"} {
		addr := fmt.Sprintf("127.0.0.1:%d", ports[i])
		scrapes = append(scrapes, "http://"+addr+"/metrics")
		args := []string{"serve", "--services", services, "--nats", url, "--ack-wait", busFaultAckWait, "--metrics", addr}
		if services == "runner" {
			args = append(args, "--instances", "2", "--work-dir", t.TempDir())
		}
		startProc(t, args...)
	}
	b := dialFault(t, ctx, url, bus.Config{})
	// Twice each way: SIGTERM (the server shuts down cleanly) and SIGKILL
	// (nothing flushed, nothing said to the clients).
	plan := []struct {
		after int // runs ended
		sig   syscall.Signal
	}{{3, syscall.SIGTERM}, {10, syscall.SIGKILL}, {17, syscall.SIGTERM}, {24, syscall.SIGKILL}}
	var mu sync.Mutex
	ended := 0
	var restarted []string
	var restarts sync.WaitGroup
	watchFacts(t, b.Conn(), "demo", func(f events.Fact) {
		if f.Kind() != events.KindRunEnded {
			return
		}
		mu.Lock()
		ended++
		n := ended
		mu.Unlock()
		for _, p := range plan {
			if n == p.after {
				restarts.Go(func() {
					d.restart(p.sig, 500*time.Millisecond)
					mu.Lock()
					restarted = append(restarted, fmt.Sprintf("%v after %d runs ended", p.sig, n))
					mu.Unlock()
				})
			}
		}
	})
	run := factlineRun(t, ctx, url, writeFaultSuite(t, faultTrials))
	restarts.Wait()
	if run.err != nil {
		t.Fatalf("factline run through the restarts: %v\n%s", run.err, run.stderr.String())
	}
	got := awaitReported(t, ctx, b, "demo", nil)
	checkOutcome(t, got, want)
	noDeadLetters(t, ctx, b)
	var redelivered, retried float64
	for _, url := range scrapes {
		redelivered += scrapeSum(t, url, "factline_redeliveries_total")
		retried += scrapeSum(t, url, "factline_bus_infra_retries_total")
	}
	mu.Lock()
	defer mu.Unlock()
	t.Logf("restarted the server: %v; %v redeliveries, %v deliveries retried in place", restarted, redelivered, retried)
	if len(restarted) != len(plan) {
		t.Fatalf("restarted %v, planned %d restarts", restarted, len(plan))
	}
}

// clusterNode is one node of a three-node loopback cluster that a test can
// stop and start again on the same store, name and ports.
type clusterNode struct {
	cfg bus.EmbeddedConfig
	srv *bus.Embedded
}

// startRestartableCluster starts three clustered JetStream servers on
// fixed loopback ports (clients list all three, as ops/nats/node*.conf
// deploys them).
func startRestartableCluster(t *testing.T) ([]*clusterNode, string) {
	t.Helper()
	ports := freePorts(t, 6)
	var routes, urls []string
	for i := range 3 {
		routes = append(routes, fmt.Sprintf("nats-route://127.0.0.1:%d", ports[3+i]))
		urls = append(urls, fmt.Sprintf("nats://127.0.0.1:%d", ports[i]))
	}
	var nodes []*clusterNode
	for i := range 3 {
		n := &clusterNode{cfg: bus.EmbeddedConfig{
			StoreDir: t.TempDir(), Durability: bus.SyncInterval, Listen: fmt.Sprintf("127.0.0.1:%d", ports[i]), Name: fmt.Sprintf("n%d", i+1),
			Cluster: &bus.ClusterConfig{Name: "factline-rolling", Listen: fmt.Sprintf("127.0.0.1:%d", ports[3+i]), Routes: routes},
		}}
		n.start(t)
		nodes = append(nodes, n)
		t.Cleanup(func() {
			if n.srv != nil {
				n.srv.Shutdown()
			}
		})
	}
	return nodes, strings.Join(urls, ",")
}

func (n *clusterNode) start(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	srv, err := bus.StartEmbedded(ctx, n.cfg)
	if err != nil {
		t.Errorf("start %s: %v", n.cfg.Name, err)
		return
	}
	n.srv = srv
}

// restart stops the node, starts it again after pause, and waits until it
// is healthy: its JetStream assets are current with the rest of the
// cluster, so that the next node may go.
func (n *clusterNode) restart(t *testing.T, ctx context.Context, pause time.Duration) error {
	n.srv.Shutdown()
	n.srv = nil
	time.Sleep(pause)
	n.start(t)
	if n.srv == nil {
		return fmt.Errorf("%s did not start again", n.cfg.Name)
	}
	for {
		st := n.srv.Server().Healthz(&server.HealthzOptions{})
		if st.Status == "ok" {
			return nil
		}
		if ctx.Err() != nil {
			return fmt.Errorf("%s never became healthy again: %s", n.cfg.Name, st.Error)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// Every node of a three-node cluster is restarted in turn while the suite
// runs (each once the one before is current again), with every service
// connected to the whole cluster and every stream replicated three times:
// a rolling upgrade is a non-event.
func TestFaultRollingRestart(t *testing.T) {
	want := faultFree(t)
	nodes, url := startRestartableCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	theSink().reset(nil)
	// JetStream needs its meta leader before streams can be made.
	var b *bus.Bus
	for b == nil && ctx.Err() == nil {
		actx, stop := context.WithTimeout(ctx, 5*time.Second)
		nb, err := bus.Dial(actx, url, bus.Config{Replicas: 3}, nats.ReconnectWait(100*time.Millisecond))
		stop()
		if err == nil {
			b = nb
			t.Cleanup(b.Conn().Close)
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	if b == nil {
		t.Fatal("the cluster never took the streams")
	}
	startFleetIn(t, ctx, fleetSpec{copies: 1, ackWait: 5 * time.Second, connect: func() *bus.Bus { return dialFault(t, ctx, url, bus.Config{Replicas: 3}) }})
	// Node i goes once 2+8i runs have ended and node i-1 is current again.
	var mu sync.Mutex
	ended := 0
	var rolled []string
	trigger := make(chan struct{}, 3)
	watchFacts(t, b.Conn(), "demo", func(f events.Fact) {
		if f.Kind() != events.KindRunEnded {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		ended++
		if ended == 2 || ended == 10 || ended == 18 {
			trigger <- struct{}{}
		}
	})
	rolling := make(chan error, 1)
	go func() {
		for _, n := range nodes {
			select {
			case <-trigger:
			case <-ctx.Done():
				rolling <- ctx.Err()
				return
			}
			mu.Lock()
			at := ended
			mu.Unlock()
			t0 := time.Now()
			if err := n.restart(t, ctx, 500*time.Millisecond); err != nil {
				rolling <- err
				return
			}
			mu.Lock()
			rolled = append(rolled, fmt.Sprintf("%s (at %d runs ended, current again after %v at %d)", n.cfg.Name, at, time.Since(t0).Round(100*time.Millisecond), ended))
			mu.Unlock()
		}
		rolling <- nil
	}()
	submitSuite(t, ctx, b, writeFaultSuite(t, faultTrials))
	got := awaitReported(t, ctx, b, "demo", func() string {
		mu.Lock()
		defer mu.Unlock()
		return fmt.Sprintf("rolled %v\n", rolled)
	})
	if err := <-rolling; err != nil {
		t.Fatalf("rolling restart: %v", err)
	}
	checkOutcome(t, got, want)
	noDeadLetters(t, ctx, b)
	mu.Lock()
	defer mu.Unlock()
	t.Logf("restarted %v", rolled)
}

// The suite runs against a server whose store JetStream caps at 8 MB, of
// which other data took all but a few hundred kB: the store fills up
// mid-suite. `factline run` says so and exits non-zero; the service
// process's /healthz is unhealthy and factline_bus_store_full is 1, while
// the services hold their work. Once the other data is removed, the same
// suite, followed again, finishes with the fault-free report: nothing was
// dropped, dead-lettered or counted twice.
func TestFaultFullStore(t *testing.T) {
	want := faultFree(t)
	conf := filepath.Join(t.TempDir(), "limits.conf")
	if err := os.WriteFile(conf, []byte("jetstream {\n  max_file_store: 8MB\n}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	srv := startServerWith(t, bus.EmbeddedConfig{ConfigFile: conf})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	theSink().reset(nil)
	url := srv.ClientURL()
	b := dialFault(t, ctx, url, bus.Config{})
	other := occupy(t, ctx, b.JetStream(), 400<<10)
	metricsAddr := fmt.Sprintf("127.0.0.1:%d", freePorts(t, 1)[0])
	startProc(t, "serve", "--nats", url, "--instances", "4", "--ack-wait", busFaultAckWait, "--work-dir", t.TempDir(), "--metrics", metricsAddr)

	suite := writeFaultSuite(t, faultTrials)
	// Bounded, not timed: a follower that waits for ever is killed here.
	fctx, stop := context.WithTimeout(ctx, 2*time.Minute)
	first := factlineRun(t, fctx, url, suite)
	killed := fctx.Err() != nil
	stop()
	var exit *exec.ExitError
	if !errors.As(first.err, &exit) || exit.ExitCode() != 1 || killed {
		t.Fatalf("factline run on a store that fills: %v, want exit status 1 (not killed after 2 minutes)\n%s", first.err, first.stderr.String())
	}
	if msg := first.stderr.String(); !strings.Contains(msg, "the NATS store is full") || !strings.Contains(msg, "free space") {
		t.Fatalf("factline run does not say the store is full and what to do:\n%s", msg)
	}
	t.Logf("factline run said:\n%s", lastLines(first.stderr.String(), 2))
	// Polled, not read once: a write that slips through when the server
	// frees a little space (a replaced blob's old chunks) may clear it for
	// a moment.
	if health := waitHTTP(t, "http://"+metricsAddr+"/healthz", http.StatusServiceUnavailable); !strings.Contains(health, "the NATS store is full") {
		t.Fatalf("/healthz on a full store: %q", health)
	}
	if v := metricValue(t, "http://"+metricsAddr+"/metrics", "factline_bus_store_full"); v != "1" {
		t.Fatalf("factline_bus_store_full = %q on a full store", v)
	}
	// Summed over the consumers: which of them met the full store first
	// is the luck of the suite (one series a consumer, each from 0).
	if retries := scrapeSum(t, "http://"+metricsAddr+"/metrics", `factline_bus_infra_retries_total\{[^}]*cause="store_full"[^}]*\}`); retries == 0 {
		t.Fatalf("no delivery retried for the full store (factline_bus_infra_retries_total with cause store_full: %v)", retries)
	}

	other.free(ctx)
	deadline := time.Now().Add(time.Minute)
	for {
		if _, code := httpGet(t, "http://"+metricsAddr+"/healthz"); code == http.StatusOK {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("/healthz stayed unhealthy after space was freed: %s", func() string { h, _ := httpGet(t, "http://"+metricsAddr+"/healthz"); return h }())
		}
		time.Sleep(200 * time.Millisecond)
	}
	again := factlineRun(t, ctx, url, suite)
	if again.err != nil {
		t.Fatalf("factline run once space was freed: %v\n%s", again.err, again.stderr.String())
	}
	got := awaitReported(t, ctx, b, "demo", nil)
	checkOutcome(t, got, want)
	noDeadLetters(t, ctx, b)
	if v := metricValue(t, "http://"+metricsAddr+"/metrics", "factline_bus_store_full"); v != "0" {
		t.Fatalf("factline_bus_store_full = %q once space was freed", v)
	}
}

// startServerWith is startServer with more settings (a configuration
// file).
func startServerWith(t *testing.T, cfg bus.EmbeddedConfig) *bus.Embedded {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cfg.StoreDir, cfg.Durability, cfg.Listen = t.TempDir(), bus.SyncInterval, "127.0.0.1:-1"
	srv, err := bus.StartEmbedded(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Shutdown)
	return srv
}

// otherData is a stream of unrelated data sharing the store.
type otherData struct {
	t  *testing.T
	js jetstream.JetStream
}

// occupy fills the store with other data until JetStream refuses a write,
// then removes enough of it to leave about room bytes free.
func occupy(t *testing.T, ctx context.Context, js jetstream.JetStream, room int) *otherData {
	t.Helper()
	s, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "OTHER", Subjects: []string{"other.>"}, Storage: jetstream.FileStorage})
	if err != nil {
		t.Fatal(err)
	}
	const chunk = 64 << 10
	data := make([]byte, chunk)
	var seqs []uint64
	for len(seqs) < 4096 {
		ack, err := js.Publish(ctx, fmt.Sprintf("other.%d", len(seqs)), data)
		if bus.StoreFull(err) {
			break
		}
		if err != nil {
			t.Fatalf("fill the store: %v", err)
		}
		seqs = append(seqs, ack.Sequence)
	}
	// The last accepted write took the store past its limit.
	for i := 0; i <= room/chunk && i < len(seqs); i++ {
		if err := s.DeleteMsg(ctx, seqs[len(seqs)-1-i]); err != nil {
			t.Fatal(err)
		}
	}
	return &otherData{t: t, js: js}
}

func (o *otherData) free(ctx context.Context) {
	o.t.Helper()
	if err := o.js.DeleteStream(ctx, "OTHER"); err != nil {
		o.t.Fatalf("free the store: %v", err)
	}
}

func httpGet(t *testing.T, url string) (string, int) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return string(body), resp.StatusCode
}

// metricValue returns the value of the first series matching the pattern ("" if
// none).
func metricValue(t *testing.T, url, series string) string {
	t.Helper()
	text, _ := httpGet(t, url)
	m := regexp.MustCompile(`(?m)^` + series + `(?:\{\})? (\S+)$`).FindStringSubmatch(text)
	if m == nil {
		return ""
	}
	return m[1]
}

// scrapeSum adds up every series of a metric.
func scrapeSum(t *testing.T, url, name string) float64 {
	t.Helper()
	text, _ := httpGet(t, url)
	sum := 0.0
	for _, m := range regexp.MustCompile(`(?m)^`+name+`(?:\{[^}]*\})? (\S+)$`).FindAllStringSubmatch(text, -1) {
		var v float64
		if _, err := fmt.Sscan(m[1], &v); err == nil {
			sum += v
		}
	}
	return sum
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// A runner whose role may not manage streams, and whose CONTROL was lost
// (an administrator deleted it; a restart loses one kept in memory), does
// not fail its runs nor exit: it runs them without control signals, says
// so on /healthz and in factline_bus_stream_missing, and is healthy again
// once an administrator has made CONTROL again.
func TestARunnerThatMayNotMakeControlSaysSo(t *testing.T) {
	t.Parallel()
	// The factline binary is built (once) before any context of the
	// test starts: the build is no part of what the context bounds.
	factlineBinary(t)
	ctx := ctxFor(t, 3*time.Minute)
	_, url := roleServer(t, "factline.conf")
	admin, _ := openAs(t, ctx, url, "FACTLINE", "admin")
	metricsAddr := fmt.Sprintf("127.0.0.1:%d", freePorts(t, 1)[0])
	runner := startProc(t, "serve", "--services", "runner", "--nats", url, "--user", "runner",
		"--password-file", writePasswordFile(t, "FACTLINE", "runner"), "--work-dir", t.TempDir(), "--metrics", metricsAddr)
	runFleet(t, ctx, admin, fleet.Options{Services: []string{fleet.Staller, fleet.Decider}})
	waitHTTP(t, "http://"+metricsAddr+"/healthz", http.StatusOK)
	if err := admin.JetStream().DeleteStream(ctx, bus.ControlStream); err != nil {
		t.Fatal(err)
	}
	f := &harness{t: t, b: admin, ctx: ctx}
	log, end := f.run("no-control", checkTask("{steps: 4, cost: 12}"), script(fail(1, "5"), turn(write("w", "4"), check("c"), done("t2/c"))))
	invariants(t, log)
	if end.Status != events.RunDone {
		t.Fatalf("the run ended %s (%q) without CONTROL; it should not depend on it", end.Status, end.Reason)
	}
	health := waitHTTP(t, "http://"+metricsAddr+"/healthz", http.StatusServiceUnavailable)
	if !strings.Contains(health, "CONTROL") || !strings.Contains(health, "missing") {
		t.Fatalf("/healthz does not name the missing stream: %q", health)
	}
	if v := metricValue(t, "http://"+metricsAddr+"/metrics", `factline_bus_stream_missing\{stream="CONTROL"\}`); v != "1" {
		t.Fatalf(`factline_bus_stream_missing{stream="CONTROL"} = %q`, v)
	}
	if !runner.alive() {
		t.Fatal("the runner process exited")
	}
	// The administrator makes it again (factline setup).
	openAs(t, ctx, url, "FACTLINE", "admin")
	waitHTTP(t, "http://"+metricsAddr+"/healthz", http.StatusOK)
	if v := metricValue(t, "http://"+metricsAddr+"/metrics", `factline_bus_stream_missing\{stream="CONTROL"\}`); v != "0" {
		t.Fatalf(`factline_bus_stream_missing{stream="CONTROL"} = %q once CONTROL is back`, v)
	}
}

// waitHTTP polls url until it answers with code (bounded) and returns the
// body.
func waitHTTP(t *testing.T, url string, code int) string {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		resp, err := http.Get(url)
		if err == nil {
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode == code {
				return string(body)
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s never answered %d (last: %v)", url, code, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
