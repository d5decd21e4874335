package integration

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/factline/factline/internal/testutil"
	"github.com/factline/factline/ops/metrics"
)

// After a run, the process's /metrics shows what the services did, under
// the documented names and bounded labels, and /healthz answers.
func TestMetricsAfterARun(t *testing.T) {
	f := startFleet(t)
	f.run("metrics", checkTask("{steps: 4, cost: 12}"), script(fail(1, "5"), turn(write("w", "4"), check("c"), done("t2/c"))))
	srv := httptest.NewServer(metrics.Handler(func() error { return nil }))
	defer srv.Close()
	text := expectSeries(t, srv.URL,
		`factline_facts_appended_total{kind="turn.completed"}`,
		`factline_facts_consumed_total{consumer="decider",kind="stall.observed"}`,
		`factline_decisions_total{result="done"}`,
		`factline_stall_actions_total{action="none"}`,
		`factline_tool_dispatches_total{disposition="executed",tool="run_command"}`,
		`factline_model_tokens_total{direction="input",provider="scripted"}`,
		`factline_runs_ended_total{status="done"}`,
		`factline_append_duration_seconds_count`,
		`factline_model_call_duration_seconds_count{provider="scripted"}`,
	)
	if strings.Contains(text, `run="`) || strings.Contains(text, `suite="`) {
		t.Error("a run or suite ID is a label")
	}
	resp, err := http.Get(srv.URL + "/healthz")
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("healthz: %v %v", resp, err)
	}
}

// After a graded suite, the grader's latency histogram and verdict counts
// have moved.
func TestGraderMetricsAfterASuite(t *testing.T) {
	faultFree(t)
	srv := httptest.NewServer(metrics.Handler(func() error { return nil }))
	defer srv.Close()
	expectSeries(t, srv.URL, `factline_verdicts_total{result="passed"}`, `factline_verdicts_total{result="failed"}`,
		`factline_grading_duration_seconds_count`)
}

// expectSeries scrapes url's /metrics, checks that every series is there
// with a positive value, and returns the whole text.
func expectSeries(t *testing.T, url string, series ...string) string {
	t.Helper()
	resp, err := http.Get(url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	text := string(body)
	for _, s := range series {
		m := regexp.MustCompile(regexp.QuoteMeta(s) + ` (\S+)`).FindStringSubmatch(text)
		if m == nil {
			t.Errorf("no series %s", s)
			continue
		}
		if v, _ := strconv.ParseFloat(m[1], 64); v <= 0 {
			t.Errorf("%s = %s, want > 0", s, m[1])
		}
	}
	return text
}

// A freshly started fleet exports its counters (and its unlabelled
// histograms) at 0 for every value of a small, known label set, before
// anything happened: rate() and increase() over a series that first
// appears at 1 see no data rather than 0 until a second event, so an alert
// or a panel over them stayed blank (the first dead letter, verdict or
// errored run went unseen). Scraped over loopback HTTP from a separate
// `factline serve` process, whose registry nothing else has touched.
func TestMetricsAreExportedAtZeroFromTheStart(t *testing.T) {
	t.Parallel()
	bin := factlineBinary(t)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	addr := fmt.Sprintf("127.0.0.1:%d", freePorts(t, 1)[0])
	cmd := exec.CommandContext(ctx, bin, "serve", "--store", t.TempDir(), "--work-dir", t.TempDir(), "--metrics", addr)
	var logs testutil.LogBuffer
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("factline serve:\n%s", logs.String())
		}
	})
	want := []string{
		`factline_append_conflicts_total`,
		`factline_append_duration_seconds_count`,
		`factline_runner_runs_in_flight`,
		`factline_grading_duration_seconds_count`,
		`factline_facts_consumed_total{consumer="runner",kind="run.requested"}`,
		`factline_facts_consumed_total{consumer="decider",kind="stall.observed"}`,
		`factline_facts_consumed_total{consumer="grader",kind="candidate.sealed"}`,
		`factline_facts_consumed_total{consumer="meter",kind="grade.verdict"}`,
		`factline_tool_dispatches_total{disposition="executed",tool="run_command"}`,
		`factline_tool_dispatches_total{disposition="rejected",tool="http_call"}`,
	}
	for _, s := range []string{"done", "blocked", "incomplete", "exhausted", "cancelled", "needs_human", "errored"} {
		want = append(want, `factline_runs_ended_total{status="`+s+`"}`)
	}
	for _, a := range []string{"none", "retry", "escalate", "stop"} {
		want = append(want, `factline_stall_actions_total{action="`+a+`"}`)
	}
	for _, r := range []string{"continue", "done", "blocked", "incomplete"} {
		want = append(want, `factline_decisions_total{result="`+r+`"}`)
	}
	for _, r := range []string{"passed", "failed", "pending", "invalid", "abstained"} {
		want = append(want, `factline_verdicts_total{result="`+r+`"}`)
	}
	testutil.Within(t, time.Minute, "factline serve to listen for scrapes", func() bool {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			c.Close()
		}
		return err == nil
	})
	// The services make their consumers as they start, after serve
	// listens: the scrape is read again until every series is there or
	// the deadline passes, and then each must read 0.
	var missing []string
	values := map[string]string{}
	wait, stopWaiting := context.WithTimeout(ctx, 30*time.Second)
	defer stopWaiting()
	for {
		missing = missing[:0]
		text, _ := httpGet(t, "http://"+addr+"/metrics")
		for _, s := range want {
			m := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(s) + ` (\S+)$`).FindStringSubmatch(text)
			if m == nil {
				missing = append(missing, s)
				continue
			}
			values[s] = m[1]
		}
		if len(missing) == 0 || wait.Err() != nil {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	if len(missing) > 0 {
		t.Errorf("no series before the first event:\n  %s", strings.Join(missing, "\n  "))
	}
	for s, v := range values {
		if v != "0" {
			t.Errorf("%s = %s before the first event, want 0", s, v)
		}
	}
}
