package runner_test

import (
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/factline/factline/cases"
	"github.com/factline/factline/events"
	"github.com/factline/factline/services/runner"
)

// A wait for a person's approval ends when the run's wall-time budget
// does: the runner rejects the call itself, saying so, sends nothing, and
// asks no approval for the reply's later calls, which could not run
// either; the run ends exhausted. Before, the run kept waiting (an hour by
// default) past its budget, and a call approved after it was answered
// with a retryable IO_ERROR, "context deadline exceeded".
func TestApprovalWaitEndsWithTheWallBudget(t *testing.T) {
	t.Parallel()
	// The approval timeout is only what ends the wait on the old code.
	e, _ := startWith(t, runner.WithApprovalTimeout(15*time.Second))
	sk := &sink{effects: map[string]int{}}
	srv := httptest.NewServer(sk)
	defer srv.Close()
	c := fixtureCase(t, "{steps: 6, wall: 2s}")
	c.HTTP = &cases.HTTPPolicy{Allow: []string{srv.URL + "/"}, Approval: true}
	c.Tools = append(c.Tools, "http_call")
	s := fmt.Sprintf(`turns:
  - calls:
      - {id: pay, name: http_call, args: {url: "%[1]s/pay", body: '{"amount": 100}'}}
      - {id: pay2, name: http_call, args: {url: "%[1]s/pay", body: '{"amount": 5}'}}
  - calls:
      - {id: done, name: task_complete, args: {status: done, evidence: [t1/pay]}}
`, srv.URL)
	log, end := e.run(c, s, "approval-wall")
	if end.Status != events.RunExhausted || sk.total() != 0 {
		t.Fatalf("ended %s (%s) with %d effects, want exhausted with none", end.Status, end.Reason, sk.total())
	}
	ds := dispatches(log)
	for _, id := range []string{"t1/pay", "t1/pay2"} {
		d := ds[id]
		if d.Dispatch.Disposition != events.DispositionRejected || d.Error == nil || d.Error.Code != "APPROVAL_REJECTED" ||
			!strings.Contains(d.Error.Message, "wall-time budget") {
			t.Errorf("%s settled as %s %+v, want rejected: the wall-time budget ran out", id, d.Dispatch.Disposition, d.Error)
		}
	}
}
