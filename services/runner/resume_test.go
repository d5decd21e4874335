package runner_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/factline/factline/bus"
	"github.com/factline/factline/bus/bustest"
	"github.com/factline/factline/cases"
	"github.com/factline/factline/events"
	"github.com/factline/factline/fleet/fleettest"
	"github.com/factline/factline/services/kit"
	"github.com/factline/factline/services/runner"
)

// The test binary doubles as a runner process: with FACTLINE_TEST_RUNNER
// set it connects to the given server, runs a runner and SIGKILLs itself
// right after its n-th commit. That is a real process dying between two
// facts, with nothing flushed or cleaned up.
func TestMain(m *testing.M) {
	if url := os.Getenv("FACTLINE_TEST_RUNNER"); url != "" {
		os.Exit(runChild(url))
	}
	code := m.Run()
	removeAgent()
	os.Exit(code)
}

func runChild(url string) int {
	crashAt, _ := strconv.Atoi(os.Getenv("FACTLINE_TEST_CRASH_AT"))
	ctx := context.Background()
	b, err := bus.Dial(ctx, url, bus.Config{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 3
	}
	n := 0
	allow, err := childExtensions()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 3
	}
	opts := []kit.Option{runner.WithWorkDir(os.Getenv("FACTLINE_TEST_WORKDIR")), kit.WithAckWait(runner.MinAckWait), kit.WithInstance("doomed"),
		runner.WithAfterCommit(func(events.Fact) {
			if n++; n == crashAt {
				_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
			}
		})}
	if allow != nil {
		opts = append(opts, runner.WithExtensions(allow))
	}
	svc, err := runner.New(b, opts...)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 3
	}
	_ = svc.Run(ctx)
	return 0
}

// twoTurnScript fails the check once, then passes it and proposes done.
const twoTurnScript = `turns:
  - calls:
      - {id: w, name: write_file, args: {path: answer.txt, content: "5\n"}}
      - {id: c, name: run_command, args: {command: ./check.sh}}
    usage: {input_tokens: 100, output_tokens: 10, cost: 2}
    reserve: 3
  - text: fixing it
    calls:
      - {id: w, name: write_file, args: {path: answer.txt, content: "4\n"}}
      - {id: c, name: run_command, args: {command: ./check.sh}}
      - {id: done, name: task_complete, args: {status: done, evidence: [t2/c]}}
    usage: {input_tokens: 120, output_tokens: 12, cost: 2}
    reserve: 3
`

// outcome is what must not change when a runner dies and another takes
// over: how the run ended, what it cost, what the model was sent, what the
// workspace holds.
type outcome struct {
	status   events.RunStatus
	reason   string
	steps    uint32
	requests []events.Digest
	snapshot events.Digest
	calls    int
	// summaries are the committed summaries: the request each was made
	// from and what it said.
	summaries []string
	cost      string
}

func outcomeOf(t *testing.T, log bus.RunLog, end events.RunEnded) outcome {
	t.Helper()
	o := outcome{status: end.Status, reason: end.Reason, steps: end.Steps, cost: "unknown"}
	if end.Spent.Cost != nil {
		o.cost = strconv.FormatUint(*end.Spent.Cost, 10)
	}
	for i, r := range log.Records {
		if r.Fact.Position != uint64(i+1) {
			t.Fatalf("positions not contiguous at %d", i)
		}
		switch b := r.Fact.Body.(type) {
		case events.TurnStarted:
			o.requests = append(o.requests, b.ContextDigest)
		case events.CandidateSealed:
			o.snapshot = b.SnapshotDigest
		case events.DispatchCompleted:
			o.calls++
		case events.ContextSummarised:
			o.summaries = append(o.summaries, fmt.Sprintf("turn %d, turns %d-%d: %s from %s", b.Turn, b.From, b.Through, b.Summary, b.RequestDigest))
		}
	}
	return o
}

// Kill the runner process after each of its commits in turn: another runner
// takes the run over and it ends as an uninterrupted run does, with the
// same requests sent to the model, the same final workspace, one settled
// dispatch per call and contiguous positions. A summarising run too: a
// crash between the summary's commit and the next turn (or anywhere else)
// sends the same requests, the summary made once and never asked again.
func TestTakeoverAtEveryBoundary(t *testing.T) {
	t.Parallel()
	b, _ := bustest.StartWith(t, bus.EmbeddedConfig{Listen: "127.0.0.1:-1"})
	// A cleanup, not a defer: the crash points run in parallel after this
	// function returns.
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	t.Cleanup(cancel)
	go func() { _ = fleettest.Decider{Bus: b}.Run(ctx) }()
	for _, sc := range []struct {
		name      string
		budget    string
		treatment *cases.Treatment
		calls     int
		summaries int
	}{
		{"full history", "{steps: 6, cost: 12}", treatment(t, twoTurnScript), 5, 0},
		{"summarised", "{steps: 6, cost: 30}", withContext(t, summarisePolicy, codeScript("turn 1 found the code 7391")), 6, 1},
	} {
		t.Run(sc.name, func(t *testing.T) {
			p, err := fleettest.Publish(ctx, b, fixtureCase(t, sc.budget), sc.treatment)
			must(t, err)
			prefix := strings.ReplaceAll(sc.name, " ", "-")

			// The reference: a run nobody interrupts.
			ref := takeover(t, ctx, b, prefix+"-ref", p, nil)
			commits, summaryAt := 0, 0
			for _, f := range ref.log.Facts() {
				if f.Producer.Service == events.OwnerRunner {
					commits++
					if f.Kind() == events.KindContextSummarised {
						summaryAt = commits
					}
				}
			}
			want := outcomeOf(t, ref.log, ref.end)
			if want.status != events.RunDone || want.calls != sc.calls || len(want.summaries) != sc.summaries {
				t.Fatalf("reference run: %+v", want)
			}
			if sc.summaries > 0 && (summaryAt == 0 || summaryAt >= commits) {
				t.Fatalf("the summary is commit %d of %d: no crash falls between it and the next turn", summaryAt, commits)
			}

			for crashAt := 1; crashAt < commits; crashAt++ {
				t.Run(fmt.Sprintf("after commit %d of %d", crashAt, commits), func(t *testing.T) {
					// Each crash point has a server of its own, so that its
					// doomed child and its heir take only its run, and the
					// crash points run in parallel: each mostly waits (a
					// process starting, the dead runner's ack wait).
					t.Parallel()
					b, srv := bustest.StartWith(t, bus.EmbeddedConfig{Listen: "127.0.0.1:-1"})
					dctx, stopDecider := context.WithCancel(ctx)
					t.Cleanup(stopDecider) // before the server stops
					go func() { _ = fleettest.Decider{Bus: b}.Run(dctx) }()
					p, err := fleettest.Publish(ctx, b, fixtureCase(t, sc.budget), sc.treatment)
					must(t, err)
					run := fmt.Sprintf("%s-crash%d", prefix, crashAt)
					child := exec.Command(os.Args[0])
					child.Env = append(os.Environ(), "FACTLINE_TEST_RUNNER="+srv.ClientURL(),
						"FACTLINE_TEST_CRASH_AT="+strconv.Itoa(crashAt), "FACTLINE_TEST_WORKDIR="+t.TempDir())
					must(t, child.Start())
					res := takeover(t, ctx, b, run, p, child)
					got := outcomeOf(t, res.log, res.end)
					if got.status != want.status || got.reason != want.reason || got.steps != want.steps ||
						got.snapshot != want.snapshot || got.calls != want.calls || fmt.Sprint(got.requests) != fmt.Sprint(want.requests) ||
						fmt.Sprint(got.summaries) != fmt.Sprint(want.summaries) || got.cost != want.cost {
						for _, f := range res.log.Facts() {
							t.Logf("%d %s %s %+v", f.Position, f.Kind(), f.Producer.Instance, f.Body)
						}
						t.Fatalf("after a crash at commit %d:\n got %+v\nwant %+v", crashAt, got, want)
					}
					claims := 0
					for _, f := range res.log.Facts() {
						if c, ok := f.Body.(events.RunClaimed); ok {
							claims++
							if claims == 2 && c.Lease != 2 {
								t.Fatalf("the takeover claimed lease %d", c.Lease)
							}
						}
					}
					if claims != 2 {
						t.Fatalf("%d claims, want the dead runner's and the takeover's", claims)
					}
				})
			}
		})
	}
}

type ended struct {
	log bus.RunLog
	end events.RunEnded
}

// takeover requests the run; if a doomed child runs it first, waits for the
// child to die before an in-process runner (which takes the run over once
// the dead runner's lease expires) starts.
func takeover(t *testing.T, ctx context.Context, b *bus.Bus, run string, p fleettest.Published, child *exec.Cmd) ended {
	t.Helper()
	must(t, fleettest.Request(ctx, b, "suite", run, p, 1))
	if child != nil {
		err := child.Wait()
		if ws, ok := child.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
			t.Fatalf("the child runner did not die by SIGKILL: %v", err)
		}
	}
	rctx, stop := context.WithCancel(ctx)
	defer stop()
	svc, err := runner.New(b, runner.WithWorkDir(t.TempDir()), kit.WithAckWait(runner.MinAckWait), kit.WithInstance("heir"),
		runner.WithApprovalTimeout(2*time.Second))
	must(t, err)
	done := make(chan struct{})
	go func() { _ = svc.Run(rctx); close(done) }()
	defer func() { stop(); <-done }()
	log, end, err := fleettest.WaitEnded(ctx, b, "suite", run)
	must(t, err)
	return ended{log, end}
}

// A runner process dies after its external effect reached the sink but
// before it could settle the call (the sink kills it on receipt: a lost
// acknowledgement). The runner that takes over follows the tool's contract:
// a deduplicating sink may be sent the call again under the same
// operation ID, a sink with a status lookup is asked, and otherwise the run
// stops for a person naming the operation. The sink never counts two.
func TestExternalEffectAfterCrash(t *testing.T) {
	t.Parallel()
	b, srv := bustest.StartWith(t, bus.EmbeddedConfig{Listen: "127.0.0.1:-1"})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	go func() { _ = fleettest.Decider{Bus: b}.Run(ctx) }()
	for _, c := range []struct {
		name           string
		dedupe, status bool
		resolve        string // a person's finding, sent once the runner died
		want           events.RunStatus
	}{
		{"the sink deduplicates", true, false, "", events.RunDone},
		{"the sink has a status lookup", false, true, "", events.RunDone},
		{"a person finds it applied", false, false, events.OutcomeApplied, events.RunDone},
		{"no way to know", false, false, "", events.RunNeedsHuman},
	} {
		t.Run(c.name, func(t *testing.T) {
			var child *exec.Cmd
			var once sync.Once
			sk := &sink{effects: map[string]int{}, dedupe: c.dedupe}
			sk.onPost = func() { once.Do(func() { _ = child.Process.Kill() }) }
			hs := httptest.NewServer(sk)
			defer hs.Close()
			kase := fixtureCase(t, "{steps: 6}")
			kase.HTTP = &cases.HTTPPolicy{Allow: []string{hs.URL + "/"}, Dedupe: c.dedupe}
			if c.status {
				kase.HTTP.Status = hs.URL + "/status/{operation}"
			}
			kase.Tools = append(kase.Tools, "http_call")
			script := fmt.Sprintf(`turns:
  - calls:
      - {id: pay, name: http_call, args: {url: "%s/pay", body: '{"amount": 5}'}}
      - {id: done, name: task_complete, args: {status: done, evidence: [t1/pay]}}
`, hs.URL)
			p, err := fleettest.Publish(ctx, b, kase, treatment(t, script))
			must(t, err)
			child = exec.Command(os.Args[0])
			child.Env = append(os.Environ(), "FACTLINE_TEST_RUNNER="+srv.ClientURL(), "FACTLINE_TEST_WORKDIR="+t.TempDir())
			must(t, child.Start())
			run := strings.ReplaceAll(strings.ReplaceAll(c.name, " ", "-"), "the-", "")
			if c.resolve != "" {
				// Signals wait in the CONTROL stream: the runner that takes
				// the run over reads it when it needs it.
				must(t, b.Controls().Send(ctx, "suite", run, events.Control{Signal: events.SignalResolve,
					Operation: run + "/t1/pay", Outcome: c.resolve, Reason: "checked the sink"}))
			}
			res := takeover(t, ctx, b, run, p, child)
			if res.end.Status != c.want {
				t.Fatalf("ended %s/%q, want %s", res.end.Status, res.end.Reason, c.want)
			}
			if n := sk.total(); n != 1 {
				t.Fatalf("the sink counted %d effects, want exactly 1", n)
			}
			if c.want == events.RunNeedsHuman && !strings.Contains(res.end.Reason, run+"/t1/pay") {
				t.Fatalf("the reason does not name the operation: %q", res.end.Reason)
			}
			if c.resolve != "" {
				found := false
				for _, f := range res.log.Facts() {
					if ca, ok := f.Body.(events.ControlAccepted); ok && ca.Control.Signal == events.SignalResolve && ca.Outcome == c.resolve {
						found = true
					}
				}
				if !found {
					t.Fatal("the person's finding was not accepted as a fact")
				}
			}
		})
	}
}
