package integration

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/factline/factline/bus/bustest"
	"github.com/factline/factline/events"
	"github.com/factline/factline/fleet"
	"github.com/factline/factline/fleet/fleettest"
	"github.com/factline/factline/ops/audit"
	"github.com/factline/factline/services/grader"
	"github.com/factline/factline/services/kit"
	"github.com/factline/factline/services/meter"
	"github.com/factline/factline/services/runner"
)

// earlySuite writes a dataset suite of n cases under two scripted
// treatments: "wrong" writes a wrong answer, "right" the right one, each
// turn after a short delay so that runs are still waiting when the suite
// settles.
func earlySuite(t *testing.T, n int) string {
	t.Helper()
	dir := t.TempDir()
	var data strings.Builder
	for i := range n {
		fmt.Fprintf(&data, "{\"id\": \"q%02d\", \"answer\": %d}\n", i, i)
	}
	files := map[string]string{
		"d.jsonl":        data.String(),
		"fixture/README": "answer\n",
		"case.tmpl":      "id: {{.case_id}}\ninstruction: write the answer to answer.txt\nfixture: fixture\nrequires_write: true\nbudget: {steps: 3}\ngrading:\n  instruments:\n    - {id: answer, kind: file, path: answer.txt, contains: {{yaml .answer}}}\n",
		"wrong/t.yaml":   "id: wrong\nmodel: {provider: scripted, scripts: scripts}\n",
		"right/t.yaml":   "id: right\nmodel: {provider: scripted, scripts: scripts}\n",
		"suite.yaml":     "name: early\ndataset: {path: d.jsonl, template: case.tmpl, id: id}\ntreatments: [{path: wrong/t.yaml}, {path: right/t.yaml}]\nstopping: {comparison: wrong vs right, min_pairs: 6}\n",
	}
	for i := range n {
		for tr, answer := range map[string]string{"wrong": "x", "right": fmt.Sprint(i)} {
			files[fmt.Sprintf("%s/scripts/q%02d.yaml", tr, i)] = fmt.Sprintf("turns:\n  - delay: 40ms\n    calls:\n"+
				"      - {id: w, name: write_file, args: {path: answer.txt, content: \"%s\\n\"}}\n"+
				"      - {id: done, name: task_complete, args: {status: done, evidence: [t1/w]}}\n", answer)
		}
	}
	for name, content := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return filepath.Join(dir, "suite.yaml")
}

// A suite whose comparison is settled stops early: the meter records
// suite.stopped once the anytime-valid sequence excludes no difference,
// the runs not yet started end cancelled (suite_stopped) without a turn,
// and the report is complete and says the suite stopped early.
func TestASuiteStopsEarlyOnceItsComparisonIsSettled(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	b, _ := bustest.Start(t)
	f, err := fleet.Start(ctx, b, fleet.Options{Per: map[string][]kit.Option{
		fleet.Runner: {runner.WithWorkDir(t.TempDir()), kit.WithWorkers(1)},
		fleet.Grader: {grader.WithWorkDir(t.TempDir())},
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Stop()
	const n = 40
	if _, err := fleettest.SubmitFile(ctx, b, earlySuite(t, n), "test"); err != nil {
		t.Fatal(err)
	}
	got := awaitReported(t, ctx, b, "early", nil)
	if vs := audit.Check(got.facts, audit.Options{Finished: true}); len(vs) > 0 {
		t.Fatalf("the audit found %d violations, first: %v", len(vs), vs[0])
	}
	r, err := meter.Report(ctx, b, "early")
	if err != nil {
		t.Fatal(err)
	}
	st := r.StoppedEarly
	if st == nil || st.Reason != events.StopDifference || st.Comparison != "wrong vs right" || st.Pairs < 6 || st.Low <= 0 {
		t.Fatalf("stopped early: %+v; want a difference in favour of right after at least 6 pairs", st)
	}
	notRun := 0
	for _, a := range r.Attempts {
		if a.Status == events.RunCancelled && strings.Contains(a.Reason, "stopped early") {
			notRun++
		}
	}
	if !r.Complete || notRun == 0 || notRun >= 2*n-int(2*st.Pairs) {
		t.Fatalf("complete %v, %d of %d runs not run after %d pairs; want a complete report with the runs not yet started left unrun",
			r.Complete, notRun, 2*n, st.Pairs)
	}
	t.Logf("stopped after %d pairs, interval [%d, %d]‰; %d of %d runs not run", st.Pairs, st.Low, st.High, notRun, 2*n)
}
