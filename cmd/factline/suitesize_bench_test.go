//go:build linux

package main

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/factline/factline/internal/testutil"
)

// BenchmarkRunSuiteSize runs 'factline run' (all five services and the
// embedded server in its one process, fsync interval) on suites of
// 10,000, 50,000 and 100,000 one-turn runs (ten cases, one scripted
// treatment, 1,000 to 10,000 trials) and reports its resident set when a
// tenth, half and nine tenths of the runs had ended (rss10-MiB, rss50-MiB,
// rss90-MiB), its peak (peak-MiB: the end, when the report of every
// attempt is built, is in it), and the runs ended a second over the whole
// suite and over its first and last tenth. Memory must follow the runs in
// flight, and the rate must not fall, whatever the suite's size
// (docs/benchmarks.md#suite-size).
//
//	go test -run '^$' -bench BenchmarkRunSuiteSize -benchtime 1x -timeout 10h ./cmd/factline/
//
// FACTLINE_BENCH_SIZES=10000,20000 picks other sizes.
func BenchmarkRunSuiteSize(b *testing.B) {
	bin := filepath.Join(b.TempDir(), "factline")
	if out, err := testutil.GoBuild(bin, ".").CombinedOutput(); err != nil {
		b.Fatalf("build: %v\n%s", err, out)
	}
	sizes := []int{10_000, 50_000, 100_000}
	if env := os.Getenv("FACTLINE_BENCH_SIZES"); env != "" {
		sizes = nil
		for _, f := range strings.Split(env, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil || n < 10 || n%10 != 0 || n > 100_000 {
				b.Fatalf("FACTLINE_BENCH_SIZES: %q is not a multiple of 10 from 10 to 100,000", f)
			}
			sizes = append(sizes, n)
		}
	}
	for _, n := range sizes {
		b.Run(fmt.Sprintf("runs=%d", n), func(b *testing.B) {
			suite := writeSizedSuite(b, n)
			for range b.N {
				s := runSized(b, bin, suite, n)
				b.ReportMetric(s.rss[0], "rss10-MiB")
				b.ReportMetric(s.rss[1], "rss50-MiB")
				b.ReportMetric(s.rss[2], "rss90-MiB")
				b.ReportMetric(s.peak, "peak-MiB")
				b.ReportMetric(s.rate, "runs/s")
				b.ReportMetric(s.first, "first-tenth-runs/s")
				b.ReportMetric(s.last, "last-tenth-runs/s")
			}
		})
	}
}

// writeSizedSuite writes a suite of n one-turn runs: ten cases, each
// answered done at once by a scripted model, under one treatment.
func writeSizedSuite(b *testing.B, n int) string {
	b.Helper()
	dir := b.TempDir()
	files := map[string]string{"t.yaml": "id: t\nmodel: {provider: scripted, scripts: s}\n"}
	var list strings.Builder
	for c := 1; c <= 10; c++ {
		files[fmt.Sprintf("c%d.yaml", c)] = fmt.Sprintf("id: c%d\ninstruction: Say you are done (case %d).\nbudget: {steps: 2}\n", c, c)
		files[fmt.Sprintf("s/c%d.yaml", c)] = "turns:\n  - text: Done.\n    usage: {input_tokens: 100, output_tokens: 5, cost: 1}\n"
		fmt.Fprintf(&list, "  - {path: c%d.yaml}\n", c)
	}
	files["suite.yaml"] = fmt.Sprintf("name: size\ncases:\n%streatments: [{path: t.yaml}]\ntrials: %d\n", list.String(), n/10)
	for name, body := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	return filepath.Join(dir, "suite.yaml")
}

// sized is what one run of a sized suite measured.
type sized struct {
	rss         [3]float64 // MiB when a tenth, half, nine tenths had ended
	peak        float64    // MiB
	rate        float64    // runs ended a second, whole suite
	first, last float64    // over the first and the last tenth
}

// runSized runs the suite and watches the process: its resident set from
// /proc every 200 ms, and the runs ended from its progress lines.
func runSized(b *testing.B, bin, suite string, n int) sized {
	b.Helper()
	cmd := exec.Command(bin, "run", suite, "--store", b.TempDir(), "--fsync", "interval")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	start := time.Now()
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	var mu sync.Mutex
	ended, rss := 0, 0.0
	var at [11]time.Duration // when k tenths had ended
	var res sized
	marks := 0
	rssAt := map[int]int{1: 0, 5: 1, 9: 2} // tenths → res.rss
	lines := make(chan struct{})
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			m := progressLine.FindStringSubmatch(sc.Text())
			if m == nil {
				continue
			}
			e, _ := strconv.Atoi(m[3])
			mu.Lock()
			ended = e
			for marks <= 10 && e >= marks*n/10 {
				at[marks] = time.Since(start)
				if i, ok := rssAt[marks]; ok {
					res.rss[i] = rss
				}
				// On stderr as it goes too: a 100k suite takes long enough
				// that whoever runs it wants to see where it is.
				line := fmt.Sprintf("%d runs: %d/%d ended after %s, RSS %.0f MiB", n, e, n, at[marks].Round(time.Second), rss)
				b.Log(line)
				fmt.Fprintln(os.Stderr, line)
				marks++
			}
			mu.Unlock()
		}
	}()
	done := make(chan error, 1)
	go func() { <-lines; done <- cmd.Wait() }()
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	status := fmt.Sprintf("/proc/%d/status", cmd.Process.Pid)
	for {
		select {
		case err := <-done:
			if err != nil {
				b.Fatalf("run: %v\n%s", err, stderr.String())
			}
			mu.Lock()
			defer mu.Unlock()
			if ended != n {
				b.Fatalf("%d of %d runs ended", ended, n)
			}
			tenth := float64(n / 10)
			res.rate = float64(n) / (at[10] - at[0]).Seconds()
			res.first = tenth / (at[1] - at[0]).Seconds()
			res.last = tenth / (at[10] - at[9]).Seconds()
			return res
		case <-tick.C:
			data, err := os.ReadFile(status)
			if err != nil {
				continue
			}
			mu.Lock()
			rss = procMiB(data, "VmRSS:")
			res.peak = max(res.peak, procMiB(data, "VmHWM:"))
			mu.Unlock()
		}
	}
}

// procMiB reads a "Key:  N kB" line of /proc/PID/status, in MiB.
func procMiB(status []byte, key string) float64 {
	for _, l := range strings.Split(string(status), "\n") {
		if v, ok := strings.CutPrefix(l, key); ok {
			var kb int64
			if _, err := fmt.Sscanf(strings.TrimSpace(v), "%d kB", &kb); err == nil {
				return float64(kb) / 1024
			}
		}
	}
	return 0
}
