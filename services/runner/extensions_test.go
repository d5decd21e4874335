package runner_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/factline/factline/bus"
	"github.com/factline/factline/bus/bustest"
	"github.com/factline/factline/events"
	"github.com/factline/factline/fleet/fleettest"
	"github.com/factline/factline/services/kit"
	"github.com/factline/factline/services/runner"
	"github.com/factline/factline/services/runner/extensions"
	"github.com/factline/factline/services/runner/extensions/extensionstest"
)

// startWithExtensions runs a runner with an extension allowlist, and the
// stand-in decider, on a real embedded JetStream server.
func startWithExtensions(t *testing.T, allow *extensions.Allowlist) *env {
	t.Helper()
	e, _ := startWith(t, runner.WithExtensions(allow), kit.WithWorkers(2))
	return e
}

// testAllowlist pins the test MCP server as "testsrv" (and, when given,
// the same server under another name with another pin).
func testAllowlist(t *testing.T, bin string, f extensionstest.Files, extra string) *extensions.Allowlist {
	t.Helper()
	return extensionstest.Allowlist(t, bin, "", f, "", extra)
}

// End to end through the real runner with a scripted model: discovery,
// success, invalid arguments and a tool error as observations, a tool the
// allowlist does not list is unknown to the model, and a tool the server
// calls read-only but the allowlist calls external waits for a person's
// approval of its exact arguments. The server ends with the run.
func TestExtensionEndToEnd(t *testing.T) {
	t.Parallel()
	bin := extensionstest.BuildServer(t)
	f := extensionstest.NewFiles(t)
	e := startWithExtensions(t, testAllowlist(t, bin, f, ""))
	c := fixtureCase(t, "{steps: 6}")
	c.Extensions = []string{"testsrv"}
	s := `turns:
  - calls:
      - {id: echo, name: testsrv__echo, args: {text: hello}}
      - {id: bad, name: testsrv__add, args: {a: 1, b: two}}
      - {id: fail, name: testsrv__fail, args: {}}
      - {id: secret, name: testsrv__secret, args: {}}
  - calls:
      - {id: pub, name: testsrv__publish, args: {message: hello world}}
  - calls:
      - {id: done, name: task_complete, args: {status: done, evidence: [t1/echo, t2/pub]}}
`
	status, err := e.b.Conn().SubscribeSync("status.suite.ext")
	must(t, err)
	defer status.Unsubscribe()
	e.start(c, s, "ext")
	pub := e.waitFact("ext", func(f events.Fact) bool {
		d, ok := f.Body.(events.DispatchIntended)
		return ok && d.CallID == "pub"
	}).Body.(events.DispatchIntended)
	if pub.Effect != events.EffectExternal || pub.Tool != "testsrv__publish" {
		t.Fatalf("intended %+v: the allowlist's effect class did not decide", pub)
	}
	// The runner waits for a person: nothing reached the sink meanwhile.
	for waiting := false; !waiting; {
		if _, ran := dispatches(e.load("ext"))["t2/pub"]; ran {
			t.Fatal("the external call settled without an approval")
		}
		ctx, cancel := context.WithTimeout(e.ctx, 200*time.Millisecond)
		m, err := status.NextMsgWithContext(ctx)
		cancel()
		waiting = err == nil && strings.Contains(string(m.Data), `"awaiting_approval"`) && strings.Contains(string(m.Data), pub.OperationID)
	}
	if got := extensionstest.Lines(t, f.Sink); len(got) != 0 {
		t.Fatalf("the external call ran before approval: %v", got)
	}
	must(t, e.b.Controls().Send(e.ctx, "suite", "ext", events.Control{Signal: events.SignalApprove, Operation: pub.OperationID, ArgsDigest: pub.ArgsDigest}))
	log, end := e.wait("ext")
	if end.Status != events.RunDone {
		t.Fatalf("ended %s/%q", end.Status, end.Reason)
	}

	// The claim records source, version and capabilities, and the identity.
	claims := kinds(log, events.KindRunClaimed)
	if len(claims) != 1 {
		t.Fatalf("%d claims", len(claims))
	}
	claim := claims[0].Body.(events.RunClaimed)
	digest, _ := extensions.FileDigest(bin)
	if len(claim.Extensions) != 1 || claim.Identity == "" {
		t.Fatalf("claim %+v", claim)
	}
	rec := claim.Extensions[0]
	if rec.Name != "testsrv" || rec.Command != bin || rec.Executable != digest || rec.Server != "factline-test-server" || rec.Version != "1.2.3" {
		t.Fatalf("extension record %+v", rec)
	}
	wantTools := []events.ExtensionTool{{Name: "echo", Effect: "read", Approval: "never"}, {Name: "add", Effect: "read", Approval: "never"},
		{Name: "fail", Effect: "read", Approval: "never"}, {Name: "publish", Effect: "external", Approval: "always"},
		{Name: "stall", Effect: "read", Approval: "never"}}
	if !slices.Equal(rec.Tools, wantTools) || !slices.Equal(rec.Withheld, []string{"secret"}) {
		t.Fatalf("recorded tools %+v, withheld %v", rec.Tools, rec.Withheld)
	}

	// What the model was offered: the allowlisted tools, not the withheld one.
	started := kinds(log, events.KindTurnStarted)[0].Body.(events.TurnStarted)
	req, err := e.b.Blobs().Get(e.ctx, started.ContextDigest)
	must(t, err)
	if !strings.Contains(string(req), "testsrv__echo") || strings.Contains(string(req), "testsrv__secret") {
		t.Fatalf("the model's tools: %s", req)
	}

	ds := dispatches(log)
	check := func(ref string, disp events.Disposition, code, output string) {
		t.Helper()
		d, ok := ds[ref]
		gotCode := ""
		if ok && d.Error != nil {
			gotCode = d.Error.Code
		}
		if !ok || d.Dispatch.Disposition != disp || gotCode != code || !strings.Contains(d.Output, output) {
			t.Errorf("%s: %+v (error %q), want %s, code %q, output with %q", ref, d.Dispatch, gotCode, disp, code, output)
		}
	}
	check("t1/echo", events.DispositionExecuted, "", "echo: hello")
	check("t1/bad", events.DispositionRejected, "BAD_ARGUMENTS", "testsrv__add")
	check("t1/fail", events.DispositionExecuted, "TOOL_ERROR", "the widget is broken")
	check("t1/secret", events.DispositionRejected, "UNKNOWN_TOOL", "testsrv__secret")
	check("t2/pub", events.DispositionExecuted, "", "published hello world")
	approved := false
	for _, f := range log.Facts() {
		if ca, ok := f.Body.(events.ControlAccepted); ok && ca.Control.Signal == events.SignalApprove && ca.CallID == "pub" && ca.ArgsDigest == pub.ArgsDigest {
			approved = true
		}
	}
	if !approved {
		t.Error("no accepted approval of the publish call")
	}

	// The server saw only the calls the runner let through, once each.
	calls := extensionstest.Lines(t, f.Calls)
	want := []string{`echo {"text":"hello"}`, `fail {}`, `publish {"message":"hello world"}`}
	if !slices.Equal(calls, want) {
		t.Fatalf("the server received %q, want %q", calls, want)
	}
	if sink := extensionstest.Lines(t, f.Sink); !slices.Equal(sink, []string{pub.OperationID + " hello world"}) {
		t.Fatalf("sink %q, want one effect under operation %s", sink, pub.OperationID)
	}

	// One server process for the run, killed with its process group.
	starts := extensionstest.Lines(t, f.Marker)
	if len(starts) != 1 {
		t.Fatalf("the server started %d times", len(starts))
	}
	pid, _ := strconv.Atoi(starts[0])
	b, err := os.ReadFile(f.Child)
	must(t, err)
	child, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	for _, p := range []int{pid, child} {
		extensionstest.WaitGone(t, p)
	}
}

// Cancel while an extension call is in flight: the call is cancelled, the
// cancel is accepted, and the server's process group (the server and the
// child it left running) is killed with the run.
func TestExtensionCancelledCall(t *testing.T) {
	t.Parallel()
	bin := extensionstest.BuildServer(t)
	f := extensionstest.NewFiles(t)
	e := startWithExtensions(t, testAllowlist(t, bin, f, ""))
	c := fixtureCase(t, "{steps: 6}")
	c.Extensions = []string{"testsrv"}
	e.start(c, `turns:
  - calls:
      - {id: stall, name: testsrv__stall, args: {}}
  - calls:
      - {id: after, name: testsrv__echo, args: {text: too late}}
`, "extcancel")
	e.waitFact("extcancel", func(f events.Fact) bool {
		d, ok := f.Body.(events.DispatchIntended)
		return ok && d.CallID == "stall"
	})
	// The server has the call before the cancel is sent.
	for deadline := time.Now().Add(30 * time.Second); !slices.Contains(extensionstest.Lines(t, f.Calls), "stall {}"); {
		if time.Now().After(deadline) {
			t.Fatal("the server never got the call")
		}
		time.Sleep(10 * time.Millisecond)
	}
	must(t, e.b.Controls().Send(e.ctx, "suite", "extcancel", events.Control{Signal: events.SignalCancel, Reason: "enough"}))
	log, end := e.wait("extcancel")
	if end.Status != events.RunCancelled {
		t.Fatalf("ended %s/%q", end.Status, end.Reason)
	}
	d := dispatches(log)["t1/stall"]
	if d.Dispatch.Disposition != events.DispositionCanceled || d.Error == nil || d.Error.Code != "TIMEOUT" {
		t.Fatalf("the stalled call settled as %+v (error %+v)", d.Dispatch, d.Error)
	}
	if _, ran := dispatches(log)["t2/after"]; ran {
		t.Fatal("a call ran after the cancel")
	}
	if calls := extensionstest.Lines(t, f.Calls); slices.Contains(calls, `echo {"text":"too late"}`) {
		t.Fatalf("the server got a call after the cancel: %v", calls)
	}
	starts := extensionstest.Lines(t, f.Marker)
	pid, _ := strconv.Atoi(starts[0])
	b, err := os.ReadFile(f.Child)
	must(t, err)
	child, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	extensionstest.WaitGone(t, pid)
	extensionstest.WaitGone(t, child)
}

// An extension the allowlist does not name, and one whose executable is
// not the pinned file, are refused before any process starts; the refusal
// is the run's ending, with a typed reason.
func TestExtensionRefusedBeforeStart(t *testing.T) {
	t.Parallel()
	bin := extensionstest.BuildServer(t)
	f := extensionstest.NewFiles(t)
	tampered := extensionstest.NewFiles(t)
	targs, _ := json.Marshal(tampered.Args())
	e := startWithExtensions(t, testAllowlist(t, bin, f, fmt.Sprintf(`  - name: tampered
    command: %s
    args: %s
    digest: sha256:%s
    tools:
      - {name: echo, effect: read}
`, bin, targs, strings.Repeat("0", 64))))
	for _, c := range []struct{ run, ext, reason string }{
		{"rogue", "rogue", "extension_rejected: rogue: not_allowlisted: "},
		{"tampered", "tampered", "extension_rejected: tampered: digest_mismatch: "},
	} {
		k := fixtureCase(t, "{steps: 6}")
		k.Extensions = []string{c.ext}
		log, end := e.run(k, "turns:\n  - calls: [{name: task_complete, args: {status: done}}]\n", c.run)
		if end.Status != events.RunErrored || !strings.HasPrefix(end.Reason, c.reason) {
			t.Fatalf("%s: ended %s/%q, want errored with %q", c.run, end.Status, end.Reason, c.reason)
		}
		for _, k := range []events.Kind{events.KindRunClaimed, events.KindTurnStarted, events.KindDispatchIntended} {
			if n := len(kinds(log, k)); n != 0 {
				t.Fatalf("%s: %d %s facts after a refusal", c.run, n, k)
			}
		}
	}
	if got := extensionstest.Lines(t, tampered.Marker); len(got) != 0 {
		t.Fatalf("the tampered server started: %v", got)
	}
	if got := extensionstest.Lines(t, f.Marker); len(got) != 0 {
		t.Fatalf("a server started for runs that named none it may run: %v", got)
	}
}

func (e *env) load(run string) bus.RunLog {
	e.t.Helper()
	log, err := e.b.LoadRun(e.ctx, "suite", run)
	must(e.t, err)
	return log
}

// childExtensions is the allowlist a child runner process reads from the
// file FACTLINE_TEST_EXTENSIONS names (none when unset).
func childExtensions() (*extensions.Allowlist, error) {
	path := os.Getenv("FACTLINE_TEST_EXTENSIONS")
	if path == "" {
		return nil, nil
	}
	return extensions.Load(path)
}

// A runner process dies after an extension's external effect took place
// but before it could settle the call (the server kills it on the effect:
// a lost acknowledgement). Its server exits with it (its input closes), and
// the runner that takes the run over starts its own, records it in its
// claim, and does not repeat the call: nothing tells it whether the effect
// happened, so the run stops for a person naming the operation.
func TestExtensionEffectAfterCrash(t *testing.T) {
	t.Parallel()
	bin := extensionstest.BuildServer(t)
	f := extensionstest.NewFiles(t)
	d, err := extensions.FileDigest(bin)
	must(t, err)
	args, _ := json.Marshal([]string{"-marker", f.Marker, "-calls", f.Calls, "-sink", f.Sink, "-kill-parent-after-publish"})
	path := t.TempDir() + "/ext.yaml"
	must(t, os.WriteFile(path, []byte(fmt.Sprintf(`extensions:
  - name: testsrv
    command: %s
    args: %s
    digest: %s
    start_timeout: 60s
    tools:
      - {name: publish, effect: external}
`, bin, args, d)), 0o644))
	allow, err := extensions.Load(path)
	must(t, err)

	b, srv := bustest.StartWith(t, bus.EmbeddedConfig{Listen: "127.0.0.1:-1"})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	go func() { _ = fleettest.Decider{Bus: b}.Run(ctx) }()
	kase := fixtureCase(t, "{steps: 6}")
	kase.Extensions = []string{"testsrv"}
	p, err := fleettest.Publish(ctx, b, kase, treatment(t, `turns:
  - calls:
      - {id: pub, name: testsrv__publish, args: {message: once}}
      - {id: done, name: task_complete, args: {status: done, evidence: [t1/pub]}}
`))
	must(t, err)
	child := exec.Command(os.Args[0])
	child.Env = append(os.Environ(), "FACTLINE_TEST_RUNNER="+srv.ClientURL(), "FACTLINE_TEST_WORKDIR="+t.TempDir(),
		"FACTLINE_TEST_EXTENSIONS="+path)
	must(t, child.Start())
	e := &env{t: t, b: b, ctx: ctx}
	must(t, fleettest.Request(ctx, b, "suite", "extcrash", p, 1))
	pub := e.waitFact("extcrash", func(f events.Fact) bool {
		d, ok := f.Body.(events.DispatchIntended)
		return ok && d.CallID == "pub"
	}).Body.(events.DispatchIntended)
	must(t, b.Controls().Send(ctx, "suite", "extcrash", events.Control{Signal: events.SignalApprove, Operation: pub.OperationID, ArgsDigest: pub.ArgsDigest}))
	err = child.Wait()
	if ws, ok := child.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("the child runner did not die by SIGKILL: %v", err)
	}
	starts := extensionstest.Lines(t, f.Marker)
	if len(starts) != 1 {
		t.Fatalf("server starts before the takeover: %v", starts)
	}
	first, _ := strconv.Atoi(starts[0])
	extensionstest.WaitGone(t, first)

	heir, err := runner.New(b, runner.WithWorkDir(t.TempDir()), kit.WithAckWait(runner.MinAckWait), kit.WithInstance("heir"),
		runner.WithApprovalTimeout(2*time.Second), runner.WithExtensions(allow))
	must(t, err)
	rctx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { _ = heir.Run(rctx); close(done) }()
	defer func() { stop(); <-done }()
	log, end, err := fleettest.WaitEnded(ctx, b, "suite", "extcrash")
	must(t, err)
	if end.Status != events.RunNeedsHuman || !strings.Contains(end.Reason, pub.OperationID) {
		t.Fatalf("ended %s/%q, want needs_human naming %s", end.Status, end.Reason, pub.OperationID)
	}
	if sink := extensionstest.Lines(t, f.Sink); len(sink) != 1 {
		t.Fatalf("the sink holds %d effects, want exactly 1: %v", len(sink), sink)
	}
	claims := kinds(log, events.KindRunClaimed)
	if len(claims) != 2 {
		t.Fatalf("%d claims, want the dead runner's and the heir's", len(claims))
	}
	for i, c := range claims {
		rc := c.Body.(events.RunClaimed)
		if rc.Lease != uint32(i+1) || len(rc.Extensions) != 1 || rc.Extensions[0].Version != "1.2.3" || rc.Identity == "" {
			t.Fatalf("claim %d: %+v", i+1, rc)
		}
	}
	starts = extensionstest.Lines(t, f.Marker)
	if len(starts) != 2 {
		t.Fatalf("server starts %v, want the heir's own too", starts)
	}
	second, _ := strconv.Atoi(starts[1])
	extensionstest.WaitGone(t, second)
}
