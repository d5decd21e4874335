//go:build linux

package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/factline/factline/internal/testutil"
)

// BenchmarkRunSuiteSize runs 'factline run' (all five services and the
// embedded server in its one process, fsync interval) on suites of
// 10,000, 50,000 and 100,000 one-turn runs (ten cases, one scripted
// treatment, 1,000 to 10,000 trials) and reports its resident set when a
// tenth, half and nine tenths of the runs had ended and when the last had
// (rss10-MiB, rss50-MiB, rss90-MiB, rssend-MiB), its peak (peak-MiB: the
// end, when the report of every attempt is built, is in it), and the runs
// ended a second over the whole suite and over its first and last tenth.
// Memory must follow the runs in flight, and the rate must not fall,
// whatever the suite's size (docs/benchmarks.md#suite-size).
//
//	go test -run '^$' -bench BenchmarkRunSuiteSize -benchtime 1x -timeout 10h ./cmd/factline/
//
// FACTLINE_BENCH_SIZES=10000,20000 picks other sizes.
//
// FACTLINE_BENCH_SPLIT=1 runs the same suite in three processes instead,
// so the server's memory (its index of the subjects stored) reads apart
// from the services' and the submitter's: 'factline serve --services none
// --store DIR --listen :0 --fsync interval' holds the store, 'factline
// serve --nats URL --nkey DIR/nats-client.nk --instances 2' runs the five
// services, and 'factline run --nats URL --nkey …' submits and follows.
// Each figure is then reported per process, prefixed server-, services-
// and submitter-.
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
	split := os.Getenv("FACTLINE_BENCH_SPLIT") == "1"
	for _, n := range sizes {
		b.Run(fmt.Sprintf("runs=%d", n), func(b *testing.B) {
			suite := writeSizedSuite(b, n)
			for range b.N {
				s := runSized(b, sizedProcesses(b, bin, suite, split), n)
				for _, p := range s.procs {
					prefix := ""
					if split {
						prefix = p.name + "-"
					}
					for i, at := range []string{"rss10", "rss50", "rss90", "rssend"} {
						b.ReportMetric(p.rss[i], prefix+at+"-MiB")
					}
					b.ReportMetric(p.peak, prefix+"peak-MiB")
				}
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
	procs       []*watched
	rate        float64 // runs ended a second, whole suite
	first, last float64 // over the first and the last tenth
}

// watched is one process of a sized run and its memory.
type watched struct {
	name string
	cmd  *exec.Cmd
	rss  [4]float64 // MiB when a tenth, half, nine tenths, all had ended
	peak float64    // MiB
	now  float64    // MiB, the last reading
}

// sizedProcs is what runSized watches: the processes to read, the last
// of them the submitter whose progress lines say the runs ended.
type sizedProcs struct {
	procs    []*watched
	progress io.Reader
	stderr   *strings.Builder
}

// sizedProcesses starts 'factline run' on the suite: alone (the
// services and the server in it), or split across a server, the
// services and the submitter, each its own process, the first two
// stopped when the benchmark ends.
func sizedProcesses(b *testing.B, bin, suite string, split bool) sizedProcs {
	b.Helper()
	store := b.TempDir()
	args := []string{"run", suite, "--store", store, "--fsync", "interval"}
	var procs []*watched
	if split {
		url := startServing(b, bin, "server", &procs, "serve", "--services", "none", "--store", store, "--listen", ":0", "--fsync", "interval")
		cred := filepath.Join(store, "nats-client.nk")
		startServing(b, bin, "services", &procs, "serve", "--nats", url, "--nkey", cred, "--instances", "2", "--work-dir", b.TempDir())
		args = []string{"run", suite, "--nats", url, "--nkey", cred}
	}
	cmd := exec.Command(bin, args...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	name := "run"
	if split {
		name = "submitter"
	}
	return sizedProcs{procs: append(procs, &watched{name: name, cmd: cmd}), progress: stdout, stderr: &stderr}
}

var listeningOn = regexp.MustCompile(`NATS listening on (\S+);`)

// startServing starts a 'factline serve' that runs until the benchmark
// ends, adds it to procs, and returns the NATS URL it says it listens on
// (empty when it says none).
func startServing(b *testing.B, bin, name string, procs *[]*watched, args ...string) string {
	b.Helper()
	cmd := exec.Command(bin, args...)
	var errOut strings.Builder
	cmd.Stderr = &errOut
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
	})
	sc := bufio.NewScanner(stdout)
	url, serving := "", false
	for !serving && sc.Scan() {
		if m := listeningOn.FindStringSubmatch(sc.Text()); m != nil {
			url = "nats://" + m[1]
		}
		serving = strings.HasPrefix(sc.Text(), "serving ")
	}
	if !serving {
		b.Fatalf("%s %v did not start: %v\n%s", bin, args, sc.Err(), errOut.String())
	}
	go func() { _, _ = io.Copy(io.Discard, stdout) }()
	*procs = append(*procs, &watched{name: name, cmd: cmd})
	return url
}

// runSized follows the run to its end and watches its processes: their
// resident sets from /proc every 200 ms, and the runs ended from the
// submitter's progress lines.
func runSized(b *testing.B, p sizedProcs, n int) sized {
	b.Helper()
	start := time.Now()
	submitter := p.procs[len(p.procs)-1]
	var mu sync.Mutex
	ended := 0
	var at [11]time.Duration // when k tenths had ended
	res := sized{procs: p.procs}
	marks := 0
	rssAt := map[int]int{1: 0, 5: 1, 9: 2, 10: 3} // tenths → watched.rss
	lines := make(chan struct{})
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(p.progress)
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
				var mem []string
				for _, w := range p.procs {
					if i, ok := rssAt[marks]; ok {
						w.rss[i] = w.now
					}
					mem = append(mem, fmt.Sprintf("%s %.0f MiB", w.name, w.now))
				}
				// On stderr as it goes too: a 100k suite takes long enough
				// that whoever runs it wants to see where it is.
				line := fmt.Sprintf("%d runs: %d/%d ended after %s, RSS %s", n, e, n, at[marks].Round(time.Second), strings.Join(mem, ", "))
				b.Log(line)
				fmt.Fprintln(os.Stderr, line)
				marks++
			}
			mu.Unlock()
		}
	}()
	done := make(chan error, 1)
	go func() { <-lines; done <- submitter.cmd.Wait() }()
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case err := <-done:
			if err != nil {
				b.Fatalf("run: %v\n%s", err, p.stderr.String())
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
			for _, w := range p.procs {
				data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", w.cmd.Process.Pid))
				if err != nil {
					continue
				}
				mu.Lock()
				w.now = procMiB(data, "VmRSS:")
				w.peak = max(w.peak, procMiB(data, "VmHWM:"))
				mu.Unlock()
			}
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
