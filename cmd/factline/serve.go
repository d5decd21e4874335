package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/factline/factline/bus"
	"github.com/factline/factline/fleet"
	"github.com/factline/factline/ops/metrics"
	"github.com/factline/factline/services/grader"
	"github.com/factline/factline/services/kit"
	"github.com/factline/factline/services/meter"
	"github.com/factline/factline/services/meter/measure"
	"github.com/factline/factline/services/runner"
	"github.com/factline/factline/services/runner/extensions"
)

// serveOptions are what serve's and run's flags change about the
// services they run.
type serveOptions struct {
	instances  int // runs a runner drives at once
	workDir    string
	extensions *extensions.Allowlist // nil: runs may use no extension
	// ackWait is how long a delivery may go unacknowledged before another
	// instance gets it (zero: each service's default).
	ackWait time.Duration
	// maxDeliver is how many times a message is delivered before it is
	// dead-lettered (zero: each service's default).
	maxDeliver int
	// workers, by service, is how many deliveries each of its instances
	// handles at once (absent: the service's default).
	workers map[string]int
	// slotLease is how long a fleet-wide model limit's slot outlives a
	// runner that stopped renewing it (zero: the runner's default).
	slotLease time.Duration
	// requestWindow is how many of a suite's runs the meter keeps
	// requested and not ended (zero: the meter's default).
	requestWindow int
	// handedBackListed is how many of the runs it stopped mid-way a
	// stopping runner's log line names (zero: every one).
	handedBackListed int
	// approvalTimeout is how long a runner waits for a person's approval
	// or resolution (zero: the runner's default).
	approvalTimeout time.Duration
}

// fleetOptions are the fleet of the named services (all five when names is
// empty) configured as o says. Every service talks to the others only
// through the bus, so any subset can run in any process.
func (o serveOptions) fleetOptions(names []string) fleet.Options {
	run := []kit.Option{kit.WithWorkers(o.instances), runner.WithHandedBackListed(o.handedBackListed)}
	var grade []kit.Option
	if o.workDir != "" {
		run = append(run, runner.WithWorkDir(o.workDir))
		grade = append(grade, grader.WithWorkDir(o.workDir))
	}
	if o.extensions != nil {
		run = append(run, runner.WithExtensions(o.extensions))
	}
	if o.slotLease > 0 {
		run = append(run, runner.WithModelSlotLease(o.slotLease))
	}
	if o.approvalTimeout > 0 {
		run = append(run, runner.WithApprovalTimeout(o.approvalTimeout))
	}
	var meterOpts []kit.Option
	if o.requestWindow > 0 {
		meterOpts = append(meterOpts, meter.WithRequestWindow(o.requestWindow))
	}
	return fleet.Options{
		Services: names,
		Shared:   []kit.Option{kit.WithLogger(slog.Default()), kit.WithConsumer(bus.ConsumerConfig{AckWait: o.ackWait, MaxDeliver: o.maxDeliver})},
		Per:      map[string][]kit.Option{fleet.Runner: run, fleet.Grader: grade, fleet.Meter: meterOpts},
		Workers:  o.workers,
	}
}

// extensionsFlag adds --extensions, the runner's allowlist of extensions
// (docs/extensions.md); load reads it (nil when the flag is not given).
func extensionsFlag(fs *pflag.FlagSet) (load func() (*extensions.Allowlist, error)) {
	path := fs.String("extensions", "", "the runner's allowlist of extensions (MCP servers) runs may use (docs/extensions.md)")
	return func() (*extensions.Allowlist, error) {
		if *path == "" {
			return nil, nil
		}
		l, err := extensions.Load(*path)
		if err != nil {
			return nil, fileError{err}
		}
		return l, nil
	}
}

// newServeCmd runs any subset of the services against a store or a NATS
// server until it is stopped.
func newServeCmd() *cobra.Command {
	var o serveFlags
	c := newCommand("serve", noArgs)
	fs := onTarget(c, &o.t, o.run)
	fs.StringVar(&o.list, "services", strings.Join(fleet.Names(), ","), "comma-separated services to run: "+strings.Join(fleet.Names(), ", ")+"; or "+servesNone+" (with --listen: only serve the store)")
	_ = c.RegisterFlagCompletionFunc("services", fixedCompletions(fleet.Names()...))
	fs.StringVar(&o.listen, "listen", "", "with --store: also serve NATS clients of other processes at PORT or :PORT (this machine only) or HOST:PORT; they authenticate with the store's credential")
	fs.BoolVar(&o.allowRemote, "allow-remote", false, "with --listen or --metrics: allow an address other hosts can reach (0.0.0.0, a LAN address); NATS clients still need the store's credential, /metrics and /healthz need none, and the traffic is not encrypted")
	fs.BoolVar(&o.noAuth, "no-auth", false, "with --listen on loopback: admit every local process without a credential (throwaway stores only)")
	fs.IntVar(&o.instances, "instances", 1, "runs a runner drives at once")
	fs.StringVar(&o.workDir, "work-dir", "", "where runners make attempt workspaces and graders restore candidates (default: the OS temp dir)")
	fs.DurationVar(&o.ackWait, "ack-wait", 0, "how long a delivery may go without an ack or heartbeat before another instance takes it over (default 30s; a runner's at least 2s, see docs/resume.md); every instance of a service must agree")
	requestWindowFlag(fs, &o.requestWindow)
	fs.IntVar(&o.maxDeliver, "max-deliver", 0, "how many times a message is delivered before it is dead-lettered as poison (default 5, the staller's 10); a runner then ends the run errored")
	fs.StringToIntVar(&o.workers, "workers", nil, "deliveries each service handles at once, e.g. staller=32,decider=32 (default 16 for the staller and the decider, runs in per-run order; the runner's is --instances)")
	fs.DurationVar(&o.slotLease, "model-slot-lease", 0, "how long a slot of a fleet-wide model limit stays held after the runner holding it stops renewing it, e.g. because it died (default 30s; docs/models.md)")
	approvalTimeoutFlag(fs, &o.approvalTimeout)
	fs.StringVar(&o.metricsAddr, "metrics", "", "serve /metrics and /healthz on this address: PORT or :PORT is this machine only; another host (0.0.0.0:9464) needs --allow-remote")
	fsyncFlag(c, &o.t.fsync)
	o.loadExtensions = extensionsFlag(fs)
	o.flags = fs
	return c
}

// servesNone is the --services value that runs no service: serve then
// only holds its store and serves it to other processes (--listen).
const servesNone = "none"

// serveFlags are serve's flags.
type serveFlags struct {
	t                     target
	list, listen, workDir string
	allowRemote, noAuth   bool
	instances, maxDeliver int
	requestWindow         int
	ackWait, slotLease    time.Duration
	approvalTimeout       time.Duration
	metricsAddr           string
	workers               map[string]int
	loadExtensions        func() (*extensions.Allowlist, error)
	flags                 *pflag.FlagSet
}

func (o *serveFlags) run(ctx context.Context, _ []string, out, _ io.Writer) error {
	t := &o.t
	allow, err := o.loadExtensions()
	if err != nil {
		return err
	}
	var names []string
	storeOnly := strings.TrimSpace(o.list) == servesNone
	if storeOnly && o.listen == "" {
		return usageError{"--services " + servesNone + " needs --store DIR --listen PORT: a process that runs no service only serves its store to others"}
	}
	for _, n := range strings.Split(o.list, ",") {
		n = strings.TrimSpace(n)
		if storeOnly {
			break
		}
		if !slices.Contains(fleet.Names(), n) {
			return usageError{fmt.Sprintf("unknown service %q (have: %s)", n, strings.Join(fleet.Names(), ", "))}
		}
		if slices.Contains(names, n) {
			return usageError{fmt.Sprintf("--services: %q is named twice (more of a runner's runs at once: --instances)", n)}
		}
		names = append(names, n)
	}
	if o.instances < 1 {
		return usageError{"--instances must be at least 1"}
	}
	if err := refuseExplicitZero(o.flags, "ack-wait", "max-deliver", "request-window", "model-slot-lease", "approval-timeout"); err != nil {
		return err
	}
	if err := checkApprovalTimeout(o.approvalTimeout); err != nil {
		return err
	}
	if o.ackWait < 0 || (o.ackWait > 0 && o.ackWait < time.Second) {
		return usageError{"--ack-wait must be at least 1s"}
	}
	if slices.Contains(names, fleet.Runner) {
		if err := runner.CheckAckWait(o.ackWait); err != nil {
			return usageError{"--ack-wait: " + err.Error()}
		}
	}
	if o.slotLease < 0 || (o.slotLease > 0 && o.slotLease < time.Second) {
		// 0 is the default; anything else under a second would be taken
		// for it (a negative one) or refused by the runner only after
		// connecting.
		return usageError{fmt.Sprintf("--model-slot-lease %s: must be at least 1s (default 30s): a slot is held that long after its runner stops renewing it", o.slotLease)}
	}
	if o.maxDeliver < 0 {
		return usageError{fmt.Sprintf("--max-deliver must be at least 1, got %d", o.maxDeliver)}
	}
	if err := checkRequestWindow(o.requestWindow); err != nil {
		return err
	}
	for n, w := range o.workers {
		switch {
		case n == fleet.Runner:
			return usageError{"--workers runner=…: a runner's concurrent runs are --instances"}
		case !slices.Contains(fleet.Names(), n):
			return usageError{fmt.Sprintf("--workers: unknown service %q (have: %s)", n, strings.Join(fleet.Names(), ", "))}
		case !slices.Contains(names, n):
			return usageError{fmt.Sprintf("--workers %s=%d: %s is not among --services", n, w, n)}
		case w < 1:
			return usageError{fmt.Sprintf("--workers %s=%d: at least 1", n, w)}
		}
	}
	metricsAt, err := metricsAddr(o.metricsAddr, o.allowRemote)
	if err != nil {
		return err
	}
	var b *bus.Bus
	var closeBus func()
	if o.listen != "" {
		if t.store == "" {
			return usageError{"--listen needs --store: it serves the embedded server"}
		}
		if t.cred.given() {
			return usageError{"credentials and TLS flags apply to --nats only; --listen makes the store's own credential"}
		}
		plan, err := planListen(o.listen, o.allowRemote, o.noAuth)
		if err != nil {
			return err
		}
		b, closeBus, err = openEmbedded(ctx, t, plan, out)
		if errors.Is(err, syscall.EADDRINUSE) {
			return listenError("--listen", plan.addr, err)
		}
		if err != nil {
			return err
		}
	} else {
		switch {
		case o.noAuth || o.allowRemote && o.metricsAddr == "":
			return usageError{"--allow-remote and --no-auth go with --listen (--allow-remote with --metrics too)"}
		}
		b, closeBus, err = t.open(ctx)
		if err == nil && t.conn != nil {
			fmt.Fprintln(out, t.conn.Describe())
		}
	}
	if err != nil {
		return err
	}
	defer closeBus()
	var needs []need
	for _, n := range names {
		needs = append(needs, serviceNeeds(n)...)
	}
	if err := t.probe(ctx, b, needs); err != nil {
		return err
	}
	if metricsAt != "" {
		// Unhealthy while the bus itself fails under the services: no
		// connection, a full store, a stream missing that this role may
		// not make (the services hold their work meanwhile).
		stopMetrics, err := serveMetrics(metricsAt, b.Health)
		if err != nil {
			return err
		}
		defer stopMetrics()
	}
	if storeOnly {
		// The server alone: its process's memory and CPU are the store's,
		// apart from any service's (docs/benchmarks.md#suite-size).
		fmt.Fprintln(out, "serving the store only, no service; stop with SIGTERM or Ctrl-C")
		<-ctx.Done()
		return nil
	}
	f, err := fleet.Start(ctx, b, serveOptions{instances: o.instances, workDir: o.workDir, ackWait: o.ackWait, maxDeliver: o.maxDeliver, extensions: allow, workers: o.workers, slotLease: o.slotLease,
		requestWindow: o.requestWindow, approvalTimeout: o.approvalTimeout}.fleetOptions(names))
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "serving %s; stop with SIGTERM or Ctrl-C (work in flight is handed back, never acknowledged unfinished)\n", strings.Join(names, ", "))
	return f.Wait()
}

// openEmbedded makes this process the store's holder, serving it to other
// processes as plan says, and prints how they connect. Unless plan opts
// out, every client must hold the store's credential, which the first
// start writes into the store. A store another process holds is refused,
// naming that process: its server already has the files open.
func openEmbedded(ctx context.Context, t *target, plan listenPlan, out io.Writer) (*bus.Bus, func(), error) {
	s, err := openStore(ctx, t.store, bus.StoreOptions{Durability: t.fsync.get(), RequireDurability: t.fsync.set,
		Listen: &bus.StoreListen{Addr: plan.addr, Auth: plan.auth}})
	if err != nil {
		return nil, nil, err
	}
	t.conn, t.embedded = s, true
	fmt.Fprintln(out, s.Describe())
	addr, local, credPath, made, _ := s.Served()
	printHowToConnect(out, t.store, addr, local, plan, credPath, made)
	return s.Bus(), s.Close, nil
}

// printHowToConnect tells the operator, on the command's own output, how
// other processes connect: commands to paste, with the credential.
func printHowToConnect(out io.Writer, store string, addr net.Addr, local string, plan listenPlan, credPath string, made bool) {
	dir := store
	if abs, err := filepath.Abs(store); err == nil {
		dir = abs
	}
	if !plan.auth {
		msg := fmt.Sprintf("--no-auth: %s admits every process on this machine without a credential; any of them can submit work, append facts or delete the stream. Use it for a throwaway store only.", local)
		slog.Warn("embedded NATS without authentication", "url", local, "store", dir)
		fmt.Fprintf(out, "WARNING: %s\n", msg)
		fmt.Fprintf(out, "NATS clients connect at %s:\n", local)
		fmt.Fprintf(out, "  on this machine:  factline tail --store %s\n", shellWord(dir))
		fmt.Fprintf(out, "  from any client:  factline tail --nats %s\n", local)
		return
	}
	note := "kept from an earlier start"
	if made {
		note = "made now"
	}
	fmt.Fprintf(out, "NATS listening on %s; clients authenticate with the store's credential %s (mode 0600, %s):\n", addr, credPath, note)
	fmt.Fprintf(out, "  on this machine:  factline tail --store %s\n", shellWord(dir))
	fmt.Fprintf(out, "  from any client:  factline tail --nats %s --nkey %s\n", local, shellWord(credPath))
	if !plan.loopback {
		fmt.Fprintf(out, "  from another host: copy %s there (mode 0600) and use --nats nats://THIS-HOST:%d --nkey FILE; the traffic is not encrypted\n",
			shellWord(credPath), addr.(*net.TCPAddr).Port)
	}
}

// serveMetrics serves /metrics and /healthz until the returned function is
// called.
func serveMetrics(addr string, health func() error) (func(), error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, listenError("--metrics", addr, err)
	}
	srv := &http.Server{Handler: metrics.Handler(health), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	slog.Info("serving metrics", "addr", ln.Addr().String())
	return func() { _ = srv.Close() }, nil
}

// approvalTimeoutFlag adds --approval-timeout, how long a runner waits
// for a person's approval or resolution (docs/controls.md).
func approvalTimeoutFlag(fs *pflag.FlagSet, d *time.Duration) {
	fs.DurationVar(d, "approval-timeout", 0, "how long a runner waits for a person to approve an operation (then it is rejected) or to resolve one of unknown outcome (default 1h; docs/controls.md)")
}

// checkApprovalTimeout refuses a negative --approval-timeout (0 is the
// default; refuseExplicitZero refuses one given as 0).
func checkApprovalTimeout(d time.Duration) error {
	if d < 0 {
		return usageError{fmt.Sprintf("--approval-timeout %s: must be more than 0 (default 1h)", d)}
	}
	return nil
}

// requestWindowFlag adds --request-window, the meter's window of runs
// requested ahead (docs/suite.md#request-window).
func requestWindowFlag(fs *pflag.FlagSet, n *int) {
	fs.IntVar(n, "request-window", 0, fmt.Sprintf("the meter's window: how many of a suite's runs are requested and not ended at once (default %d; a few times the runs the fleet drives at once)", measure.DefaultWindow))
}

// checkRequestWindow refuses a window that could request nothing.
func checkRequestWindow(n int) error {
	if n < 0 {
		return usageError{fmt.Sprintf("--request-window must be at least 1, got %d (leave it out for the default, %d)", n, measure.DefaultWindow)}
	}
	return nil
}
