//go:build soak

package integration

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/factline/factline/bus"
	"github.com/factline/factline/events"
	"github.com/factline/factline/ops/audit"
)

// The soak (make soak): 1,000 short scripted runs through two runner
// processes and one process of the other four services, on one server on
// loopback, bounded at ten minutes. It reports the rate held, redeliveries,
// conflicts and each process's peak RSS; the figures go into
// docs/operations.md.
func TestSoak(t *testing.T) {
	const cases, treatments, trials = 5, 2, 100
	srv := startServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	url := srv.ClientURL()
	ports := freePorts(t, 3)
	names := []string{"runner-a", "runner-b", "services"}
	procs := []*proc{
		startProc(t, "serve", "--services", "runner", "--nats", url, "--instances", "4", "--work-dir", t.TempDir(), "--metrics", fmt.Sprintf("127.0.0.1:%d", ports[0])),
		startProc(t, "serve", "--services", "runner", "--nats", url, "--instances", "4", "--work-dir", t.TempDir(), "--metrics", fmt.Sprintf("127.0.0.1:%d", ports[1])),
		startProc(t, "serve", "--services", "staller,decider,grader,meter", "--nats", url, "--metrics", fmt.Sprintf("127.0.0.1:%d", ports[2])),
	}
	b := connector(t, srv, bus.Config{})()
	ended := make(chan struct{}, cases*treatments*trials)
	watchFacts(t, b.Conn(), "soak", func(f events.Fact) {
		if f.Kind() == events.KindRunEnded {
			ended <- struct{}{}
		}
	})
	path := writeSoakSuite(t, cases, treatments, trials)
	start := time.Now()
	submitSuite(t, ctx, b, path)
	total := cases * treatments * trials
	for i := 1; i <= total; i++ {
		select {
		case <-ended:
		case <-ctx.Done():
			t.Fatalf("only %d of %d runs ended within the bound", i-1, total)
		}
		if i%100 == 0 {
			t.Logf("%d runs ended after %s", i, time.Since(start).Round(time.Millisecond))
		}
	}
	runsDone := time.Since(start)
	got := awaitReported(t, ctx, b, "soak", nil)
	reported := time.Since(start)
	if got.ended != total {
		t.Fatalf("%d runs ended, want %d", got.ended, total)
	}
	if vs := audit.Check(got.facts, audit.Options{Finished: true}); len(vs) > 0 {
		t.Fatalf("the audit found %d violations, first: %v", len(vs), vs[0])
	}
	var table strings.Builder
	fmt.Fprintf(&table, "runs %d, facts %d; all runs ended in %s (%.1f runs/s, %.0f facts/s); reported after %s\n",
		total, len(got.facts), runsDone.Round(time.Millisecond), float64(total)/runsDone.Seconds(),
		float64(len(got.facts))/runsDone.Seconds(), reported.Round(time.Millisecond))
	fmt.Fprintf(&table, "| process | peak RSS (MiB) | redeliveries | append conflicts | dead letters |\n|---|---|---|---|---|\n")
	for i, p := range procs {
		m := scrape(t, ports[i])
		fmt.Fprintf(&table, "| %s | %.1f | %.0f | %.0f | %.0f |\n", names[i], peakRSS(t, p.pid()),
			m["factline_redeliveries_total"], m["factline_append_conflicts_total"], m["factline_dead_letters_total"])
	}
	t.Logf("soak figures:\n%s", table.String())
}

// writeSoakSuite writes a suite of short scripted runs: each case writes a
// file and reports done.
func writeSoakSuite(t *testing.T, cases, treatments, trials int) string {
	t.Helper()
	dir := t.TempDir()
	var suite strings.Builder
	fmt.Fprintf(&suite, "name: soak\ndescription: short scripted runs for the soak\ntrials: %d\ncases:\n", trials)
	files := map[string]string{}
	for c := range cases {
		id := fmt.Sprintf("c%d", c)
		fmt.Fprintf(&suite, "  - {path: cases/%s.yaml}\n", id)
		files["cases/"+id+".yaml"] = fmt.Sprintf("id: %s\ninstruction: Write note.txt, then report done.\ntools: [write_file, task_complete]\nbudget: {steps: 3}\n", id)
		files["scripts/"+id+".yaml"] = `turns:
  - calls:
      - {id: w, name: write_file, args: {path: note.txt, content: "soak\n"}}
      - {id: done, name: task_complete, args: {status: done}}
    usage: {input_tokens: 200, output_tokens: 20, cost: 1}
    reserve: 2
`
	}
	suite.WriteString("treatments:\n")
	for tr := range treatments {
		id := fmt.Sprintf("t%d", tr)
		fmt.Fprintf(&suite, "  - {path: treatments/%s.yaml}\n", id)
		files["treatments/"+id+".yaml"] = fmt.Sprintf("id: %s\nmodel: {provider: scripted, scripts: ../scripts}\nstall: {repeated_failure: %d}\n", id, tr+2)
	}
	files["suite.yaml"] = suite.String()
	writeTree(t, dir, files)
	return filepath.Join(dir, "suite.yaml")
}

// scrape reads a process's /metrics and sums each metric over its labels.
func scrape(t *testing.T, port int) map[string]float64 {
	t.Helper()
	resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/metrics", port))
	if err != nil {
		t.Fatalf("scrape: %v", err)
	}
	defer resp.Body.Close()
	out := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "#") {
			continue
		}
		name, rest, _ := strings.Cut(line, " ")
		if i := strings.IndexByte(name, '{'); i >= 0 {
			name = name[:i]
		}
		if j := strings.LastIndexByte(line, ' '); j >= 0 {
			rest = line[j+1:]
		}
		if v, err := strconv.ParseFloat(rest, 64); err == nil {
			out[name] += v
		}
	}
	return out
}

// peakRSS is a process's peak resident set (VmHWM) in MiB.
func peakRSS(t *testing.T, pid int) float64 {
	t.Helper()
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatalf("read status of %d: %v", pid, err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 64)
			if err != nil {
				t.Fatalf("VmHWM %q: %v", v, err)
			}
			return kb / 1024
		}
	}
	t.Fatalf("no VmHWM for %d", pid)
	return 0
}
