package integration

import (
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"testing"

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
