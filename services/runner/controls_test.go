package runner_test

import (
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/factline/factline/bus"
	"github.com/factline/factline/cases"
	"github.com/factline/factline/events"
	"github.com/factline/factline/fleet/fleettest"
)

// waitFact waits until the run holds a fact that pred accepts.
func (e *env) waitFact(run string, pred func(events.Fact) bool) events.Fact {
	e.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		log, err := e.b.LoadRun(e.ctx, "suite", run)
		must(e.t, err)
		for _, f := range log.Facts() {
			if pred(f) {
				return f
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	e.t.Fatalf("run %s: the awaited fact never came", run)
	return events.Fact{}
}

func (e *env) start(c *cases.Case, script, run string) {
	e.t.Helper()
	p, err := fleettest.Publish(e.ctx, e.b, c, treatment(e.t, script))
	must(e.t, err)
	must(e.t, fleettest.Request(e.ctx, e.b, "suite", run, p, 1))
}

func (e *env) wait(run string) (bus.RunLog, events.RunEnded) {
	e.t.Helper()
	log, end, err := fleettest.WaitEnded(e.ctx, e.b, "suite", run)
	must(e.t, err)
	return log, end
}

// Cancel during a long command: the command's whole process group is
// killed, control.accepted is committed, and no effect follows it. An
// interruption never completes a turn, whether the command was the reply's
// last call or another followed it (that one is settled not_run).
func TestCancelDuringLongCommand(t *testing.T) {
	t.Parallel()
	e := start(t)
	for _, c := range []struct {
		name string
		last bool
	}{{"last-call", true}, {"call-before-another", false}} {
		t.Run(c.name, func(t *testing.T) { cancelDuringLongCommand(t, e, c.name, c.last) })
	}
}

func cancelDuringLongCommand(t *testing.T, e *env, run string, last bool) {
	// The command writes its child's pid in its workspace (it can write
	// nothing else of the host); the test finds it below the work dir.
	pidFile := func() string {
		var found string
		_ = filepath.WalkDir(e.work, func(p string, d fs.DirEntry, err error) error {
			if err == nil && d.Name() == "child.pid" && strings.Contains(p, "."+run+"-") {
				found = p
			}
			return nil
		})
		return found
	}
	next := "      - {id: next, name: write_file, args: {path: next.txt, content: never}}\n"
	if last {
		next = ""
	}
	s := fmt.Sprintf(`turns:
  - calls:
      - {id: long, name: run_command, args: {command: "sleep 300 & echo $! > child.pid; wait", timeout_seconds: 600}}
%s  - calls:
      - {id: after, name: write_file, args: {path: after.txt, content: too late}}
`, next)
	e.start(fixtureCase(t, "{steps: 6}"), s, run)
	e.waitFact(run, func(f events.Fact) bool { return f.Kind() == events.KindDispatchIntended })
	var pidText string
	for deadline := time.Now().Add(time.Minute); pidText == ""; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the command never wrote child.pid in its workspace below %s", e.work)
		}
		if p := pidFile(); p != "" {
			if b, err := os.ReadFile(p); err == nil {
				pidText = strings.TrimSpace(string(b))
			}
		}
	}
	must(t, e.b.Controls().Send(e.ctx, "suite", run, events.Control{Signal: events.SignalCancel, Reason: "operator changed their mind"}))
	log, end := e.wait(run)
	if end.Status != events.RunCancelled || !strings.Contains(end.Reason, "changed their mind") {
		t.Fatalf("ended %s/%q", end.Status, end.Reason)
	}
	accepted := -1
	for i, f := range log.Facts() {
		if ca, ok := f.Body.(events.ControlAccepted); ok && ca.Control.Signal == events.SignalCancel {
			accepted = i
		}
		if accepted >= 0 && (f.Kind() == events.KindDispatchIntended || f.Kind() == events.KindTurnStarted) {
			t.Fatalf("%s after the cancel was accepted", f.Kind())
		}
	}
	if accepted < 0 {
		t.Fatal("no control.accepted for the cancel")
	}
	if d := dispatches(log)["t1/long"]; d.Dispatch.Disposition != events.DispositionCanceled {
		t.Fatalf("the long command settled %s", d.Dispatch.Disposition)
	}
	if n := len(kinds(log, events.KindTurnCompleted)); n != 0 {
		t.Fatalf("the interrupted turn was completed (%d turn.completed)", n)
	}
	if !last {
		if d := dispatches(log)["t1/next"]; d.Dispatch.Disposition != events.DispositionNotRun {
			t.Fatalf("the call after the interrupted one settled %+v, want not_run", d.Dispatch)
		}
	}
	assertNoTurnAfter(t, log)
	pid, _ := strconv.Atoi(pidText)
	// Killed: gone, or a zombie waiting to be reaped by init.
	deadline := time.Now().Add(10 * time.Second)
	for syscall.Kill(pid, 0) == nil {
		out, _ := exec.Command("ps", "-o", "stat=", "-p", strconv.Itoa(pid)).Output()
		if strings.HasPrefix(strings.TrimSpace(string(out)), "Z") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the command's child %d survived the cancel", pid)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// sink is an HTTP endpoint on loopback that counts effects by idempotency
// key, as an external system would.
type sink struct {
	mu      sync.Mutex
	effects map[string]int
	dedupe  bool
	onPost  func()
}

func (s *sink) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	key := r.Header.Get("Idempotency-Key")
	if r.Method == http.MethodGet { // status lookup: /status/<operation>
		op := strings.TrimPrefix(r.URL.Path, "/status/")
		if s.effects[op] > 0 {
			w.WriteHeader(http.StatusOK)
			return
		}
		w.WriteHeader(http.StatusNotFound)
		return
	}
	io.Copy(io.Discard, r.Body)
	if !(s.dedupe && s.effects[key] > 0) {
		s.effects[key]++
	}
	if s.onPost != nil {
		s.onPost()
	}
	fmt.Fprintf(w, `{"accepted":%q}`, key)
}

func (s *sink) total() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, c := range s.effects {
		n += c
	}
	return n
}

// An approval is bound to the exact arguments: one for other arguments is
// not an approval, a rejection leaves zero effects and the run goes on.
func TestApprovalsBindToExactArguments(t *testing.T) {
	t.Parallel()
	e := start(t)
	sk := &sink{effects: map[string]int{}}
	srv := httptest.NewServer(sk)
	defer srv.Close()
	c := fixtureCase(t, "{steps: 6}")
	c.HTTP = &cases.HTTPPolicy{Allow: []string{srv.URL + "/"}, Approval: true}
	c.Tools = append(c.Tools, "http_call")
	s := fmt.Sprintf(`turns:
  - calls:
      - {id: pay, name: http_call, args: {url: "%[1]s/pay", body: '{"amount": 100}'}}
  - calls:
      - {id: pay, name: http_call, args: {url: "%[1]s/pay", body: '{"amount": 5}'}}
  - calls:
      - {id: done, name: task_complete, args: {status: done, evidence: [t2/pay]}}
`, srv.URL)
	e.start(c, s, "approve")
	first := e.waitFact("approve", func(f events.Fact) bool {
		d, ok := f.Body.(events.DispatchIntended)
		return ok && d.Turn == 1
	}).Body.(events.DispatchIntended)
	// Approving other arguments approves nothing; then reject.
	must(t, e.b.Controls().Send(e.ctx, "suite", "approve", events.Control{Signal: events.SignalApprove, Operation: first.OperationID,
		ArgsDigest: events.DigestOf([]byte(`{"amount": 1}`))}))
	must(t, e.b.Controls().Send(e.ctx, "suite", "approve", events.Control{Signal: events.SignalReject, Operation: first.OperationID, Reason: "too much"}))
	second := e.waitFact("approve", func(f events.Fact) bool {
		d, ok := f.Body.(events.DispatchIntended)
		return ok && d.Turn == 2
	}).Body.(events.DispatchIntended)
	if sk.total() != 0 {
		t.Fatalf("the rejected call reached the sink")
	}
	must(t, e.b.Controls().Send(e.ctx, "suite", "approve", events.Control{Signal: events.SignalApprove, Operation: second.OperationID,
		ArgsDigest: second.ArgsDigest}))
	log, end := e.wait("approve")
	if end.Status != events.RunDone || sk.total() != 1 {
		t.Fatalf("ended %s/%q with %d effects", end.Status, end.Reason, sk.total())
	}
	ds := dispatches(log)
	if d := ds["t1/pay"]; d.Dispatch.Disposition != events.DispositionRejected || d.Error == nil || d.Error.Code != "APPROVAL_REJECTED" {
		t.Fatalf("rejected call settled as %+v", d)
	}
	var signals []events.Signal
	for _, f := range log.Facts() {
		if ca, ok := f.Body.(events.ControlAccepted); ok {
			signals = append(signals, ca.Control.Signal)
		}
	}
	if fmt.Sprint(signals) != "[reject approve]" {
		t.Fatalf("accepted controls %v, want [reject approve]", signals)
	}
}

// Two runners holding the same run: once another claims it, the first
// makes no further effect and appends nothing more.
func TestStaleRunnerMakesNoFurtherEffect(t *testing.T) {
	t.Parallel()
	e := start(t)
	s := `turns:
  - calls:
      - {id: w, name: write_file, args: {path: answer.txt, content: "5\n"}}
    delay: 1s
  - calls:
      - {id: w, name: write_file, args: {path: answer.txt, content: "6\n"}}
`
	// The usurper's claim has a newer lease, or the same lease number as
	// ours: a claim decided on a stale read of the run (a lagging replica)
	// must still take the run away from the first runner.
	for _, lease := range []uint32{2, 1} {
		run := fmt.Sprintf("lease-%d", lease)
		e.start(fixtureCase(t, "{steps: 6}"), s, run)
		e.waitFact(run, func(f events.Fact) bool { return f.Kind() == events.KindTurnStarted })
		// Another runner takes the run while the first waits for its model.
		_, err := e.b.Commit(e.ctx, nil, "suite", run, func(log bus.RunLog) ([]bus.Pending, error) {
			f, err := events.NewFact(events.Meta{Suite: "suite", Run: run, TaskGeneration: 1, Position: log.NextPosition(),
				Producer: events.Producer{Service: events.OwnerRunner, Instance: "usurper"}}, events.RunClaimed{Runner: "usurper", Lease: lease})
			return []bus.Pending{{Fact: f}}, err
		})
		must(t, err)
		time.Sleep(2 * time.Second) // give the stale runner every chance to misbehave
		log, err := e.b.LoadRun(e.ctx, "suite", run)
		must(t, err)
		seen := false
		for _, f := range log.Facts() {
			if c, ok := f.Body.(events.RunClaimed); ok && c.Runner == "usurper" {
				seen = true
				continue
			}
			if seen && f.Producer.Service == events.OwnerRunner {
				t.Fatalf("lease %d: the stale runner appended %s after another claim", lease, f.Kind())
			}
		}
	}
}
