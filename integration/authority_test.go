package integration

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/factline/factline/bus"
	"github.com/factline/factline/bus/bustest"
	"github.com/factline/factline/events"
	"github.com/factline/factline/fleet"
	"github.com/factline/factline/services/staller"
)

// The roles of ops/nats/roles.conf, as its users are named in factline.conf.
var roles = []string{"admin", "submitter", "runner", "staller", "decider", "grader", "meter", "ops", "analyst"}

// rolePassword is the password a test gives a role's user (by environment
// variable, as an operator would).
func rolePassword(prefix, role string) string { return "pw-" + strings.ToLower(prefix) + "-" + role }

// rolePasswordsOnce sets the role passwords once for the whole test
// process. They are the same for every test and no other test reads or
// clears them, so setting them for good (instead of t.Setenv, which
// forbids t.Parallel) lets the tests on role servers run in parallel.
var rolePasswordsOnce sync.Once

// setRolePasswords puts every role's password in the environment variables
// factline.conf and tenants.conf read.
func setRolePasswords(t *testing.T) {
	t.Helper()
	rolePasswordsOnce.Do(func() {
		for _, r := range roles {
			for _, prefix := range []string{"FACTLINE", "TENANT_A", "TENANT_B"} {
				if err := os.Setenv(prefix+"_"+strings.ToUpper(r)+"_PASSWORD", rolePassword(prefix, r)); err != nil {
					t.Fatalf("set the role passwords: %v", err)
				}
			}
		}
	})
}

// roleServer starts a JetStream server in this process from one of the
// shipped configuration files, serving TCP on a free loopback port.
func roleServer(t *testing.T, conf string) (*bus.Embedded, string) {
	t.Helper()
	setRolePasswords(t)
	srv := bustest.Server(t, bus.EmbeddedConfig{ConfigFile: filepath.Join("..", "ops", "nats", conf), Listen: "127.0.0.1:-1"})
	return srv, srv.ClientURL()
}

// refusals records the permission violations a connection is told of.
type refusals struct {
	mu       sync.Mutex
	subjects []string
}

var refusedRe = regexp.MustCompile(`(?i)permissions violation for (?:publish|subscription) to "([^"]+)"`)

func (r *refusals) handler(_ *nats.Conn, _ *nats.Subscription, err error) {
	if m := refusedRe.FindStringSubmatch(err.Error()); m != nil {
		r.mu.Lock()
		r.subjects = append(r.subjects, m[1])
		r.mu.Unlock()
	}
}

// has waits (bounded) for the server to report subject refused.
func (r *refusals) has(subject string) bool {
	for range 100 {
		r.mu.Lock()
		ok := slices.Contains(r.subjects, subject)
		r.mu.Unlock()
		if ok {
			return true
		}
		time.Sleep(20 * time.Millisecond)
	}
	return false
}

func (r *refusals) list() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.subjects)
}

// connectAs connects to url as a user whose password setRolePasswords set.
func connectAs(t *testing.T, url, prefix, user string) (*nats.Conn, *refusals) {
	t.Helper()
	role := user[strings.LastIndex(user, "-")+1:]
	r := &refusals{}
	nc, err := nats.Connect(url, nats.UserInfo(user, rolePassword(prefix, role)), nats.ErrorHandler(r.handler))
	if err != nil {
		t.Fatalf("connect as %s: %v", user, err)
	}
	t.Cleanup(nc.Close)
	return nc, r
}

// openAs opens the bus as a user; the account must be set up already
// unless the user may create streams.
func openAs(t *testing.T, ctx context.Context, url, prefix, user string) (*bus.Bus, *refusals) {
	t.Helper()
	nc, r := connectAs(t, url, prefix, user)
	b, err := bus.Open(ctx, nc, bus.Config{})
	if err != nil {
		t.Fatalf("open bus as %s: %v (refused: %v)", user, err, r.list())
	}
	if got := r.list(); len(got) > 0 {
		t.Fatalf("opening the bus as %s was refused %v", user, got)
	}
	return b, r
}

// publishRefused publishes data on subject through JetStream and reports
// whether the server refused it as a permissions violation. A refused
// publish gets no answer, so the refusal is waited for, not the answer.
func publishRefused(t *testing.T, ctx context.Context, b *bus.Bus, r *refusals, subject string, data []byte) bool {
	t.Helper()
	pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	res := make(chan error, 1)
	go func() { _, err := b.JetStream().Publish(pctx, subject, data); res <- err }()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case err := <-res:
			return err != nil && r.has(subject)
		case <-tick.C:
			r.mu.Lock()
			refused := slices.Contains(r.subjects, subject)
			r.mu.Unlock()
			if refused {
				return true
			}
		}
	}
}

// stored counts the messages a stream holds on subjects matching filter.
func stored(t *testing.T, ctx context.Context, admin *bus.Bus, stream, filter string) uint64 {
	t.Helper()
	s, err := admin.JetStream().Stream(ctx, stream)
	if err != nil {
		t.Fatal(err)
	}
	info, err := s.Info(ctx, jetstream.WithSubjectFilter(filter))
	if err != nil {
		t.Fatal(err)
	}
	var n uint64
	for _, c := range info.State.Subjects {
		n += c
	}
	return n
}

func ctxFor(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// ops/nats/roles.conf lets each role append exactly the fact kinds the
// events registry says it owns: no more (a role could forge another's
// decisions), no less (the fleet would stall). Both shipped server
// configurations are checked, every user of every account.
func TestRolesAppendExactlyTheKindsTheyOwn(t *testing.T) {
	t.Parallel()
	setRolePasswords(t)
	for _, conf := range []string{"factline.conf", "tenants.conf"} {
		opts, err := server.ProcessConfigFile(filepath.Join("..", "ops", "nats", conf))
		if err != nil {
			t.Fatalf("%s: %v", conf, err)
		}
		seen := map[string]int{}
		for _, u := range opts.Users {
			role := u.Username[strings.LastIndex(u.Username, "-")+1:]
			seen[role]++
			var want []string
			for _, k := range events.Kinds() {
				if string(k.Owner()) != role {
					continue
				}
				run := "*"
				if k.SuiteScoped() {
					run = events.SuiteScope
				}
				want = append(want, "fact.*."+run+"."+string(k))
			}
			if role == "admin" {
				want = []string{">"}
			}
			var got []string
			if u.Permissions == nil || u.Permissions.Publish == nil {
				t.Fatalf("%s: user %s has no publish permissions", conf, u.Username)
			}
			for _, s := range u.Permissions.Publish.Allow {
				if strings.HasPrefix(s, "fact") || s == ">" {
					got = append(got, s)
				}
			}
			slices.Sort(got)
			slices.Sort(want)
			if !slices.Equal(got, want) {
				t.Errorf("%s: user %s may append %v; the events registry says %v", conf, u.Username, got, want)
			}
		}
		accounts := 1
		if conf == "tenants.conf" {
			accounts = 2
		}
		for _, r := range roles {
			if seen[r] != accounts {
				t.Errorf("%s: %d users of role %s, want one per account (%d)", conf, seen[r], r, accounts)
			}
		}
	}
}

// On a real server with the shipped configuration: a runner cannot append a
// grade; an operator cannot append any fact but can send a control; an
// analyst can read but publish nothing; a reader cannot take over a
// service's durable consumer. Every refusal is checked on the server side
// too: nothing refused lands in a stream.
func TestRolePermissionsOnRealServer(t *testing.T) {
	t.Parallel()
	ctx := ctxFor(t, 2*time.Minute)
	_, url := roleServer(t, "factline.conf")
	admin, _ := openAs(t, ctx, url, "FACTLINE", "admin")
	runner, runnerRefused := openAs(t, ctx, url, "FACTLINE", "runner")
	ops, opsRefused := openAs(t, ctx, url, "FACTLINE", "ops")
	analyst, analystRefused := openAs(t, ctx, url, "FACTLINE", "analyst")

	// The runner's own work lands.
	claim := bustest.Claim(t, "s1", "r1", 1)
	if _, err := runner.Append(ctx, bus.Expect{}, bus.Pending{Fact: claim}); err != nil {
		t.Fatalf("runner appends run.claimed: %v (refused %v)", err, runnerRefused.list())
	}

	// A grade from the runner, however well formed, is refused.
	verdictSubj := "fact.s1.r1.grade.verdict"
	data, _ := events.Encode(claim)
	if !publishRefused(t, ctx, runner, runnerRefused, verdictSubj, data) {
		t.Fatalf("the runner published on %s; refused: %v", verdictSubj, runnerRefused.list())
	}
	if n := stored(t, ctx, admin, bus.FactsStream, "fact.*.*.grade.>"); n != 0 {
		t.Fatalf("%d grade facts landed from the runner", n)
	}

	// Operators append no fact of any kind, but send controls and read.
	for _, k := range events.Kinds() {
		run := "r1"
		if k.SuiteScoped() {
			run = events.SuiteScope
		}
		subj, _ := events.FactSubject("s1", run, k)
		if !publishRefused(t, ctx, ops, opsRefused, subj, data) {
			t.Errorf("ops published on %s", subj)
		}
	}
	if n := stored(t, ctx, admin, bus.FactsStream, "fact.>"); n != 1 {
		t.Fatalf("FACTS holds %d facts after the operator's attempts, want only the runner's 1", n)
	}
	if err := ops.Controls().Send(ctx, "s1", "r1", events.Control{Signal: events.SignalCancel, Reason: "test"}); err != nil {
		t.Fatalf("ops sends cancel: %v (refused %v)", err, opsRefused.list())
	}
	if log, err := ops.LoadRun(ctx, "s1", "r1"); err != nil || len(log.Records) != 1 {
		t.Fatalf("ops reads the run: %d facts, %v", len(log.Records), err)
	}

	// Analysts read everything and publish nothing.
	if log, err := analyst.LoadRun(ctx, "s1", "r1"); err != nil || len(log.Records) != 1 {
		t.Fatalf("analyst loads the run: %d facts, %v (refused %v)", len(log.Records), err, analystRefused.list())
	}
	n := 0
	if _, err := analyst.Read(ctx, bus.ReadOptions{}, func(bus.Raw) error { n++; return nil }); err != nil || n != 1 {
		t.Fatalf("analyst replays FACTS: %d messages, %v (refused %v)", n, err, analystRefused.list())
	}
	for _, subj := range []string{"fact.s1.r1.run.claimed", "fact.s1._suite.suite.submitted", "ctl.s1.r1.cancel",
		"status.s1.r1", bus.DeadSubject(bus.FactsStream, "analyst"), "$O.BLOBS.C.x", "$KV.POSITIONS.history"} {
		if !publishRefused(t, ctx, analyst, analystRefused, subj, data) {
			t.Errorf("the analyst published on %s", subj)
		}
	}
	if n := stored(t, ctx, admin, bus.FactsStream, "fact.>"); n != 1 {
		t.Fatalf("FACTS holds %d facts after the analyst's attempts, want 1", n)
	}
	if n := stored(t, ctx, admin, bus.ControlStream, ">"); n != 1 {
		t.Fatalf("CONTROL holds %d messages, want the operator's one cancel", n)
	}
	if n := stored(t, ctx, admin, bus.DeadStream, ">"); n != 0 {
		t.Fatalf("DEAD holds %d messages, want none", n)
	}

	// A reader may make its own consumers, never a service's: taking over
	// the runners' durable would starve (or steal) their work.
	cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	_, err := analyst.JetStream().CreateOrUpdateConsumer(cctx, bus.FactsStream, jetstream.ConsumerConfig{Durable: "runner", AckPolicy: jetstream.AckExplicitPolicy})
	if err == nil || !analystRefused.has("$JS.API.CONSUMER.CREATE.FACTS.runner") {
		t.Fatalf("the analyst took over the runner's consumer: %v (refused %v)", err, analystRefused.list())
	}
}

// The owner check travels with the fact, not the connection: a role that
// may publish on a subject (the runner, on turn.completed) but names
// another producer in the fact is refused by the consumer, which
// dead-letters it with the reason. Together with the subject permissions,
// a fact's producer is always the kind's owner.
func TestForgedProducerIsDeadLettered(t *testing.T) {
	t.Parallel()
	ctx := ctxFor(t, 2*time.Minute)
	_, url := roleServer(t, "factline.conf")
	admin, _ := openAs(t, ctx, url, "FACTLINE", "admin")
	runner, runnerRefused := openAs(t, ctx, url, "FACTLINE", "runner")
	stallerBus, _ := openAs(t, ctx, url, "FACTLINE", "staller")
	ops, opsRefused := openAs(t, ctx, url, "FACTLINE", "ops")
	runFleet(t, ctx, stallerBus, fleet.Options{Services: []string{fleet.Staller}})

	forged := bustest.Turn(t, "s1", "r1", 1, 1)
	forged.Producer.Service = events.OwnerDecider // the runner claims to be the decider
	data, err := events.Encode(forged)
	if err != nil {
		t.Fatal(err)
	}
	subj, _ := forged.Subject()
	if _, err := runner.JetStream().Publish(ctx, subj, data); err != nil {
		t.Fatalf("the runner may publish turn.completed: %v (refused %v)", err, runnerRefused.list())
	}
	var dl []bus.DeadLetter
	for ctx.Err() == nil {
		// Operators read dead letters; they may not write them.
		if dl, err = ops.DeadLetters(ctx, staller.ConsumerName); err != nil {
			t.Fatalf("ops reads dead letters: %v (refused %v)", err, opsRefused.list())
		}
		if len(dl) > 0 {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if len(dl) != 1 || dl[0].Subject != subj || !strings.Contains(dl[0].Reason, "producer.service") {
		t.Fatalf("dead letters of the staller: %+v", dl)
	}
	// The staller answered nothing: no stall.observed for the forged turn.
	if n := stored(t, ctx, admin, bus.FactsStream, "fact.*.*.stall.observed"); n != 0 {
		t.Fatalf("%d stall observations for a forged turn", n)
	}
}

// Tenants are accounts: a tenant-B identity asking for tenant A's run finds
// nothing and writes only into its own log, while a fresh connection as
// tenant A reads A's run back whole.
func TestTenantsAreIsolated(t *testing.T) {
	t.Parallel()
	// Built before the context starts: building it (once per test binary)
	// is not what the context bounds, and on a loaded machine it took the
	// whole two minutes.
	bin := factlineBinary(t)
	ctx := ctxFor(t, 2*time.Minute)
	_, url := roleServer(t, "tenants.conf")
	openAs(t, ctx, url, "TENANT_A", "a-admin")
	openAs(t, ctx, url, "TENANT_B", "b-admin")
	aRunner, _ := openAs(t, ctx, url, "TENANT_A", "a-runner")
	bRunner, _ := openAs(t, ctx, url, "TENANT_B", "b-runner")
	bAnalyst, _ := openAs(t, ctx, url, "TENANT_B", "b-analyst")

	for pos := uint64(1); pos <= 3; pos++ {
		log, err := aRunner.LoadRun(ctx, "s1", "run-a1")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := aRunner.Append(ctx, log.Expect(), bus.Pending{Fact: bustest.Claim(t, "s1", "run-a1", pos)}); err != nil {
			t.Fatal(err)
		}
	}

	// Tenant B cannot see it, by run, by suite or by scanning.
	if log, err := bAnalyst.LoadRun(ctx, "s1", "run-a1"); err != nil || len(log.Records) != 0 || log.LastSeq != 0 {
		t.Fatalf("tenant B loads tenant A's run: %d facts, last seq %d, %v", len(log.Records), log.LastSeq, err)
	}
	if suite, err := bAnalyst.FindSuite(ctx, "run-a1"); err == nil {
		t.Fatalf("tenant B found tenant A's run in suite %q", suite)
	}
	n := 0
	if _, err := bAnalyst.Read(ctx, bus.ReadOptions{}, func(bus.Raw) error { n++; return nil }); err != nil || n != 0 {
		t.Fatalf("tenant B's replay saw %d facts (%v)", n, err)
	}

	// Tenant B writing "into" A's run writes into its own log only.
	if _, err := bRunner.Append(ctx, bus.Expect{}, bus.Pending{Fact: bustest.Claim(t, "s1", "run-a1", 1)}); err != nil {
		t.Fatalf("tenant B appends in its own account: %v", err)
	}

	// A fresh connection as tenant A (a new process would be the same: the
	// log is on the server) reads A's run whole, untouched by B.
	aFresh, _ := openAs(t, ctx, url, "TENANT_A", "a-analyst")
	log, err := aFresh.LoadRun(ctx, "s1", "run-a1")
	if err != nil || len(log.Records) != 3 {
		t.Fatalf("tenant A reads its run back: %d facts, %v", len(log.Records), err)
	}
	for i, r := range log.Records {
		if r.Fact.Position != uint64(i+1) || r.Fact.Producer.Instance != "test-runner" {
			t.Fatalf("tenant A's fact %d: %+v", i, r.Fact)
		}
	}
	if bLog, _ := bAnalyst.LoadRun(ctx, "s1", "run-a1"); len(bLog.Records) != 1 || bLog.Records[0].Fact.ID == log.Records[0].Fact.ID {
		t.Fatalf("tenant B's log of the same run name: %d facts", len(bLog.Records))
	}

	// The same from new OS processes: a replay as tenant A's analyst counts
	// A's three facts; as tenant B's, the one B wrote.
	for _, c := range []struct {
		prefix, user, want string
	}{{"TENANT_A", "a-analyst", `"run.claimed": 3`}, {"TENANT_B", "b-analyst", `"run.claimed": 1`}} {
		role := c.user[strings.LastIndex(c.user, "-")+1:]
		out, err := exec.CommandContext(ctx, bin, "replay", "kinds", "--json", "--nats", url, "--user", c.user,
			"--password-file", writePasswordFile(t, c.prefix, role)).CombinedOutput()
		if err != nil || !strings.Contains(string(out), c.want) {
			t.Fatalf("replay as %s: %v, want %s in\n%s", c.user, err, c.want, out)
		}
	}
}

// writePasswordFile writes a role's password to a file only this user can
// read, the way a secret is handed to a service.
func writePasswordFile(t *testing.T, prefix, role string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), role+".password")
	if err := os.WriteFile(p, []byte(rolePassword(prefix, role)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// roleArgs are the connection flags of a factline command run as role of
// the FACTLINE account on url, its password given in a file.
func roleArgs(t *testing.T, url, role string) []string {
	return []string{"--nats", url, "--user", role, "--password-file", writePasswordFile(t, "FACTLINE", role)}
}

// The suite run end to end by five service processes, each connected as its
// own role with its password in a file, submitted by a sixth as the
// submitter: it completes with the same report as everything run in one
// process with no identities at all. Then an analyst audits the log, an
// operator tails it, and identities doing what their role may not are
// stopped at once with the subject named.
func TestSuiteUnderRolesInSeparateProcesses(t *testing.T) {
	t.Parallel()
	bin := factlineBinary(t)
	ctx := ctxFor(t, 4*time.Minute)
	_, url := roleServer(t, "factline.conf")
	as := func(role string) []string { return roleArgs(t, url, role) }
	// A request the server refuses ends the command with exit status 1
	// and an error naming what was refused.
	refused := func(want string, args ...string) {
		t.Helper()
		cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		out, err := exec.CommandContext(cctx, bin, args...).CombinedOutput()
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.ExitCode() != 1 || cctx.Err() != nil {
			t.Fatalf("factline %v: want exit 1, got %v\n%s", args, err, out)
		}
		if !strings.Contains(string(out), "permission denied") || !strings.Contains(string(out), want) {
			t.Fatalf("factline %v: the error does not name %q:\n%s", args, want, out)
		}
	}
	// Services only look streams up: on an account nobody set up, a
	// service stops at once and says who must create them.
	refused(`"$JS.API.STREAM.CREATE.FACTS" (needed to create stream FACTS, which does not exist yet; only the admin role manages streams: run 'factline setup' as admin first)`,
		append([]string{"serve", "--services", "staller"}, as("staller")...)...)
	if out, err := exec.CommandContext(ctx, bin, append([]string{"setup"}, as("admin")...)...).CombinedOutput(); err != nil {
		t.Fatalf("setup as admin: %v\n%s", err, out)
	}
	// A service that exits early (say, refused a permission) ends the test
	// at once instead of leaving the submitter waiting.
	svcCtx, svcDied := context.WithCancelCause(ctx)
	defer svcDied(nil)
	for _, svc := range []string{"runner", "staller", "decider", "grader", "meter"} {
		args := append([]string{"serve", "--services", svc}, as(svc)...)
		if svc == "runner" {
			args = append(args, "--instances", "2", "--work-dir", t.TempDir())
		}
		cmd := exec.CommandContext(ctx, bin, args...)
		var logs bytes.Buffer
		cmd.Stdout, cmd.Stderr = &logs, &logs
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		exited := make(chan struct{})
		go func() {
			err := cmd.Wait()
			svcDied(fmt.Errorf("%s exited: %v", svc, err))
			close(exited)
		}()
		t.Cleanup(func() {
			_ = cmd.Process.Signal(syscall.SIGTERM)
			<-exited
			if t.Failed() || strings.Contains(logs.String(), "Permissions Violation") {
				t.Errorf("factline serve --services %s:\n%s", svc, logs.String())
			}
		})
	}
	suite := filepath.Join("testdata", "authority", "suite.yaml")
	var stderr bytes.Buffer
	run := exec.CommandContext(svcCtx, bin, append([]string{"run", suite, "--json"}, as("submitter")...)...)
	run.Stderr = &stderr
	distributed, err := run.Output()
	if err != nil {
		t.Fatalf("run as submitter: %v (%v)\n%s", err, context.Cause(svcCtx), stderr.String())
	}
	single, err := exec.CommandContext(ctx, bin, "run", suite, "--store", t.TempDir(), "--fsync", "interval", "--json").Output()
	if err != nil {
		t.Fatalf("run in one process: %v", err)
	}
	if a, b := normalise(t, distributed), normalise(t, single); a != b {
		t.Fatalf("reports differ:\n under roles %s\n  one process %s", a, b)
	}

	// The analyst audits the finished suite; the operator tails it.
	if out, err := exec.CommandContext(ctx, bin, append([]string{"audit", "--suite", "authority", "--finished"}, as("analyst")...)...).CombinedOutput(); err != nil {
		t.Fatalf("audit as analyst: %v\n%s", err, out)
	}
	tail, err := exec.CommandContext(ctx, bin, append([]string{"tail", "--since", "start", "--no-follow", "--kind", "run.ended"}, as("ops")...)...).CombinedOutput()
	if err != nil || strings.Count(string(tail), "run.ended") != 3 {
		t.Fatalf("tail as ops: %v\n%s", err, tail)
	}
	report, err := exec.CommandContext(ctx, bin, append([]string{"report", "authority", "--json"}, as("ops")...)...).Output()
	if err != nil || normalise(t, report) != normalise(t, distributed) {
		t.Fatalf("report as ops: %v\n%s", err, report)
	}
	export, err := exec.CommandContext(ctx, bin, append([]string{"export", "fact.authority.>"}, as("analyst")...)...).Output()
	if err != nil || len(export) == 0 {
		t.Fatalf("export as analyst: %v (%d bytes)", err, len(export))
	}

	// Doing another role's work fails fast, naming the subject.
	refused(`"fact.factline-probe.probe.grade.conflict" (needed by grader to append grade.conflict)`, append([]string{"serve", "--services", "grader"}, as("runner")...)...)
	refused(`"ctl.authority.`, append([]string{"cancel", firstRun(t, ctx, url)}, as("analyst")...)...)
	refused(`"fact.factline-probe._suite.suite.submitted"`, append([]string{"run", suite}, as("ops")...)...)
}

// firstRun returns the ID of a run of the authority suite, read as admin.
func firstRun(t *testing.T, ctx context.Context, url string) string {
	t.Helper()
	admin, _ := openAs(t, ctx, url, "FACTLINE", "admin")
	var run string
	_, err := admin.Read(ctx, bus.ReadOptions{Filter: "fact.authority.*.run.ended"}, func(r bus.Raw) error {
		_, run, _, _ = events.ParseFactSubject(r.Subject)
		return nil
	})
	if err != nil || run == "" {
		t.Fatalf("no run of the suite: %v", err)
	}
	return run
}

// factline run --nats follows its suite as the submitter, and when nothing
// has happened for a while probes the store (bus.CheckWritable): a write
// that goes unanswered is told apart from a server that is away by asking
// for the account's information, which the submitter could not. A fleet
// stalled for 10 s (nats-server stopped with SIGSTOP) ended the run with
// "permission denied: NATS user submitter may not publish to
// \"$JS.API.INFO\"" instead of riding the stall out or saying the server
// stores nothing.
func TestTheSubmitterMayAskWhatItsProbeAsks(t *testing.T) {
	t.Parallel()
	ctx := ctxFor(t, 2*time.Minute)
	_, url := roleServer(t, "factline.conf")
	openAs(t, ctx, url, "FACTLINE", "admin") // sets the streams up
	submitter, refused := openAs(t, ctx, url, "FACTLINE", "submitter")
	if err := submitter.CheckWritable(ctx); err != nil {
		t.Fatalf("the submitter's write probe: %v (refused %v)", err, refused.list())
	}
	actx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if _, err := submitter.JetStream().AccountInfo(actx); err != nil || len(refused.list()) > 0 {
		t.Fatalf("the submitter asks for the account's information: %v (refused %v)", err, refused.list())
	}
}
