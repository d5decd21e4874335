//go:build deploy

package deploy

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/factline/factline/events"
)

// fleet is one compose fleet brought up by a test, under a project name
// of its own, with its ports on 127.0.0.1 and its passwords in a
// temporary directory.
type fleet struct {
	t        *testing.T
	project  string
	file     string
	secrets  string
	env      []string
	nats     []int // the three nodes' published client ports
	promPort int
	// volumes are the volumes its containers mounted, found as it goes
	// down: the images declare volumes (/var/lib/factline, /data,
	// /prometheus), which podman makes anonymous and unlabelled.
	volumes []string
}

func upFleet(t *testing.T, ctx context.Context) *fleet {
	t.Helper()
	ports := freePorts(t, 4)
	f := &fleet{t: t, project: fmt.Sprintf("fldeploy%d", os.Getpid()), file: filepath.Join(root(t), "deploy/compose/compose.yaml"),
		secrets: t.TempDir(), nats: ports[:3], promPort: ports[3]}
	must(t)(sh(ctx, nil, filepath.Join(root(t), "deploy/compose/secrets.sh"), f.secrets))
	f.env = []string{
		"FACTLINE_SECRETS=" + f.secrets,
		"FACTLINE_ACK_WAIT=10s",
		fmt.Sprintf("FACTLINE_NATS1_PORT=%d", ports[0]),
		fmt.Sprintf("FACTLINE_NATS2_PORT=%d", ports[1]),
		fmt.Sprintf("FACTLINE_NATS3_PORT=%d", ports[2]),
		fmt.Sprintf("FACTLINE_PROMETHEUS_PORT=%d", ports[3]),
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		if t.Failed() {
			for _, c := range f.containers(ctx) {
				out, _ := sh(ctx, nil, engine(), "logs", "--tail", "60", c)
				t.Logf("%s:\n%s", c, out)
			}
		}
		f.down(ctx)
	})
	must(t)(f.compose(ctx, "up", "-d"))
	f.requireDNS(ctx)
	return f
}

// requireDNS fails the test at once when the compose network has no name
// server: the services find NATS as nats1..nats3, and without one they
// retry "no such host" until the test's deadline, half an hour on.
// podman serves names with the dnsname plugin under CNI and aardvark-dns
// under netavark; scripts/test-deps installs the one podman uses.
func (f *fleet) requireDNS(ctx context.Context) {
	f.t.Helper()
	out, err := sh(ctx, nil, engine(), "network", "inspect", "--format", "{{.DNSEnabled}}", f.network())
	if err != nil {
		f.t.Fatalf("inspect the compose network %s: %v", f.network(), err)
	}
	if strings.TrimSpace(out) != "true" {
		f.t.Fatalf("the compose network %s has no DNS, so its containers cannot find nats1..nats3: "+
			"install podman's name server (Debian: golang-github-containernetworking-plugin-dnsname under CNI, "+
			"aardvark-dns under netavark; scripts/test-deps does), then run again", f.network())
	}
}

func (f *fleet) compose(ctx context.Context, args ...string) (string, error) {
	return sh(ctx, f.env, "podman-compose", append([]string{"-p", f.project, "-f", f.file}, args...)...)
}

// container is the name podman-compose gives a service's container.
func (f *fleet) container(service string) string { return f.project + "_" + service + "_1" }

// network is the compose network's name.
func (f *fleet) network() string { return f.project + "_default" }

func (f *fleet) label() string { return "label=io.podman.compose.project=" + f.project }

func (f *fleet) containers(ctx context.Context) []string {
	out, _ := sh(ctx, nil, engine(), "ps", "-a", "--filter", f.label(), "--format", "{{.Names}}")
	return strings.Fields(out)
}

// down takes the fleet down with its volumes; podman-compose 1.0.3
// leaves the network, so it is removed here.
func (f *fleet) down(ctx context.Context) {
	f.volumes = append(f.volumes, f.mountedVolumes(ctx, f.containers(ctx))...)
	if _, err := f.compose(ctx, "down", "-v"); err != nil {
		f.t.Errorf("podman-compose down: %v", err)
	}
	// A service failing over and over (restart: on-failure) can be
	// started again between compose's stop and rm; remove what is left.
	if left := f.containers(ctx); len(left) > 0 {
		_, _ = sh(ctx, nil, engine(), append([]string{"rm", "-f", "-v"}, left...)...)
	}
	_, _ = sh(ctx, nil, engine(), "network", "rm", f.network())
	// podman-compose 1.0.3's down -v leaves the anonymous ones.
	for _, v := range f.volumes {
		_, _ = sh(ctx, nil, engine(), "volume", "rm", "-f", v)
	}
}

// mountedVolumes names the volumes the containers mount.
func (f *fleet) mountedVolumes(ctx context.Context, containers []string) []string {
	if len(containers) == 0 {
		return nil
	}
	out, _ := sh(ctx, nil, engine(), append([]string{"container", "inspect", "--format",
		`{{range .Mounts}}{{if eq .Type "volume"}}{{.Name}} {{end}}{{end}}`}, containers...)...)
	return strings.Fields(out)
}

// leftovers is whatever of the fleet the engine still has: containers,
// volumes and networks (images stay cached).
func (f *fleet) leftovers(ctx context.Context) []string {
	var left []string
	left = append(left, f.containers(ctx)...)
	vols, _ := sh(ctx, nil, engine(), "volume", "ls", "--filter", f.label(), "--format", "{{.Name}}")
	left = append(left, strings.Fields(vols)...)
	for _, v := range f.volumes {
		if _, err := sh(ctx, nil, engine(), "volume", "exists", v); err == nil {
			left = append(left, "volume "+v)
		}
	}
	nets, _ := sh(ctx, nil, engine(), "network", "ls", "--format", "{{.Name}}")
	for _, n := range strings.Fields(nets) {
		if strings.HasPrefix(n, f.project) {
			left = append(left, "network "+n)
		}
	}
	return left
}

func (f *fleet) urls() string {
	var us []string
	for _, p := range f.nats {
		us = append(us, fmt.Sprintf("nats://127.0.0.1:%d", p))
	}
	return strings.Join(us, ",")
}

// awaitSetup waits for the setup container to have made the streams
// (exited 0; it is restarted while it fails).
func (f *fleet) awaitSetup(ctx context.Context) {
	f.t.Helper()
	for {
		out, _ := sh(ctx, nil, engine(), "container", "inspect", "--format", "{{.State.Status}} {{.State.ExitCode}}", f.container("setup"))
		if strings.TrimSpace(out) == "exited 0" {
			return
		}
		select {
		case <-ctx.Done():
			f.t.Fatalf("factline setup never finished: %s", out)
		case <-time.After(2 * time.Second):
		}
	}
}

// submit runs the suite through the fleet from this machine, as the
// submitter, and returns the report when the command ends.
func (f *fleet) submit(ctx context.Context, suite string) <-chan result {
	ch := make(chan result, 1)
	bin := hostFactline(f.t)
	go func() {
		cmd := exec.CommandContext(ctx, bin, "run", suite, "--nats", f.urls(), "--replicas", "3",
			"--user", "submitter", "--password-file", filepath.Join(f.secrets, "submitter"), "--json")
		var stderr strings.Builder
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		ch <- result{string(out), stderr.String(), err}
	}()
	return ch
}

type result struct {
	report, stderr string
	err            error
}

// watch calls fn with each run.claimed and run.ended fact of a suite, read
// as the ops role through an ordered consumer, until ctx ends.
func (f *fleet) watch(ctx context.Context, suite string, fn func(events.Fact)) {
	f.t.Helper()
	pw, err := os.ReadFile(filepath.Join(f.secrets, "ops"))
	if err != nil {
		f.t.Fatal(err)
	}
	nc, err := nats.Connect(f.urls(), nats.UserInfo("ops", strings.TrimSpace(string(pw))), nats.MaxReconnects(-1))
	if err != nil {
		f.t.Fatal(err)
	}
	f.t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		f.t.Fatal(err)
	}
	var c jetstream.Consumer
	for {
		c, err = js.OrderedConsumer(ctx, "FACTS", jetstream.OrderedConsumerConfig{
			FilterSubjects: []string{"fact." + suite + ".*.run.claimed", "fact." + suite + ".*.run.ended"}})
		if err == nil {
			break
		}
		select {
		case <-ctx.Done():
			f.t.Fatalf("ordered consumer on FACTS: %v", err)
		case <-time.After(time.Second):
		}
	}
	cc, err := c.Consume(func(m jetstream.Msg) {
		if fact, err := events.DecodeStored(m.Subject(), m.Data()); err == nil {
			fn(fact)
		}
	})
	if err != nil {
		f.t.Fatal(err)
	}
	f.t.Cleanup(cc.Stop)
}

// explainDiff logs, when a suite's report differs from the reference,
// every fact of each attempt that differs, read back as the ops role: a
// fleet that decided otherwise than one process shows how.
func (f *fleet) explainDiff(ctx context.Context, suite, got, want string) {
	f.t.Helper()
	var g, w struct {
		Attempts []map[string]any `json:"attempts"`
	}
	if json.Unmarshal([]byte(got), &g) != nil || json.Unmarshal([]byte(want), &w) != nil {
		return
	}
	byRun := map[string]string{}
	for _, a := range w.Attempts {
		b, _ := json.Marshal(a)
		byRun[fmt.Sprint(a["run"])] = string(b)
	}
	for _, a := range g.Attempts {
		b, _ := json.Marshal(a)
		run := fmt.Sprint(a["run"])
		if byRun[run] == string(b) {
			continue
		}
		out, err := sh(ctx, nil, hostFactline(f.t), "tail", "fact."+suite+"."+run+".>", "--since", "start", "--no-follow",
			"--nats", f.urls(), "--replicas", "3", "--user", "ops", "--password-file", filepath.Join(f.secrets, "ops"))
		f.t.Logf("attempt %s differs; its facts (%v):\n%s", run, err, out)
	}
}

// promQuery asks Prometheus's HTTP API and decodes its data.
func (f *fleet) prom(ctx context.Context, path string, data any) error {
	req, err := http.NewRequestWithContext(ctx, "GET", fmt.Sprintf("http://127.0.0.1:%d%s", f.promPort, path), nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", path, resp.Status)
	}
	return json.NewDecoder(resp.Body).Decode(&struct {
		Data any `json:"data"`
	}{data})
}

// upByInstance is Prometheus's up{job="factline"} by target.
func (f *fleet) upByInstance(ctx context.Context) (map[string]string, error) {
	var res struct {
		Result []struct {
			Metric map[string]string `json:"metric"`
			Value  []any             `json:"value"`
		} `json:"result"`
	}
	if err := f.prom(ctx, `/api/v1/query?query=up%7Bjob%3D%22factline%22%7D`, &res); err != nil {
		return nil, err
	}
	up := map[string]string{}
	for _, r := range res.Result {
		if len(r.Value) == 2 {
			up[r.Metric["instance"]] = fmt.Sprint(r.Value[1])
		}
	}
	return up, nil
}

// The compose fleet: three NATS nodes, the five services (two runners),
// each as its role, and Prometheus. A suite run through it while one NATS
// node and one runner container holding a run are killed reports what one
// process reports without faults; Prometheus then sees every service up
// with factline's alert rules loaded; the Kubernetes manifests' service
// pods, played by podman against the same NATS, finish another suite the
// same way; and the fleet goes down leaving no container, volume or
// network.
func TestDeployComposeFleetFinishesASuiteThroughFaults(t *testing.T) {
	buildImages(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	suite := writeSuite(t, "deploy-compose")
	want := normalise(t, referenceReport(t, ctx, suite), "deploy-compose")

	f := upFleet(t, ctx)
	f.awaitSetup(ctx)

	var mu sync.Mutex
	claimed := map[string]string{} // run -> instance
	ended := map[string]bool{}
	faulted := make(chan string, 1)
	hosts := map[string]string{} // container hostname -> service
	for _, svc := range []string{"runner-a", "runner-b"} {
		h := must(t)(sh(ctx, nil, engine(), "container", "inspect", "--format", "{{.Config.Hostname}}", f.container(svc)))
		hosts[strings.TrimSpace(h)] = svc
	}
	fault := func() {
		// A runner holding a run it has not ended, and a NATS node.
		victim := "runner-a"
		for run, inst := range claimed {
			if ended[run] {
				continue
			}
			host := strings.TrimPrefix(inst, "runner-")
			if i := strings.LastIndexByte(host, '-'); i > 0 {
				host = host[:i]
			}
			if svc, ok := hosts[host]; ok {
				victim = svc
				break
			}
		}
		for _, c := range []string{f.container(victim), f.container("nats2")} {
			if _, err := sh(ctx, nil, engine(), "kill", c); err != nil {
				t.Errorf("kill %s: %v", c, err)
			}
		}
		faulted <- victim
	}
	f.watch(ctx, "deploy-compose", func(fact events.Fact) {
		mu.Lock()
		defer mu.Unlock()
		switch fact.Kind() {
		case events.KindRunClaimed:
			claimed[fact.Run] = fact.Producer.Instance
		case events.KindRunEnded:
			ended[fact.Run] = true
			if len(ended) == 2 {
				fault()
			}
		}
	})
	res := <-f.submit(ctx, suite)
	if res.err != nil {
		t.Fatalf("run through the fleet: %v\n%s", res.err, res.stderr)
	}
	select {
	case v := <-faulted:
		t.Logf("killed %s and nats2 mid-suite", v)
	default:
		t.Fatal("the suite ended before the faults were injected")
	}
	if got := normalise(t, res.report, "deploy-compose"); got != want {
		f.explainDiff(ctx, "deploy-compose", got, want)
		t.Fatalf("the fleet's report differs from one process's:\n fleet  %s\n single %s", got, want)
	}

	// What was killed comes back (restart: on-failure, or started here),
	// and Prometheus sees all six service containers up.
	for _, svc := range []string{"runner-a", "runner-b", "nats2"} {
		must(t)(sh(ctx, nil, engine(), "start", f.container(svc)))
	}
	for {
		up, err := f.upByInstance(ctx)
		all := len(up) == 6
		for _, v := range up {
			all = all && v == "1"
		}
		if err == nil && all {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("Prometheus never saw every service up: %v %v", up, err)
		case <-time.After(3 * time.Second):
		}
	}
	var rules struct {
		Groups []struct {
			Rules []struct {
				Name string `json:"name"`
			} `json:"rules"`
		} `json:"groups"`
	}
	if err := f.prom(ctx, "/api/v1/rules", &rules); err != nil {
		t.Fatal(err)
	}
	alerts, err := os.ReadFile(filepath.Join(root(t), "ops/prometheus/alerts.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	loaded := 0
	for _, g := range rules.Groups {
		loaded += len(g.Rules)
	}
	if n := strings.Count(string(alerts), "- alert:"); loaded != n || n == 0 {
		t.Fatalf("Prometheus loaded %d rules; ops/prometheus/alerts.yaml has %d", loaded, n)
	}

	t.Run("kube play", func(t *testing.T) { kubePlay(t, ctx, f) })

	f.down(ctx)
	if left := f.leftovers(ctx); len(left) > 0 {
		t.Fatalf("the fleet left %v", left)
	}
}
