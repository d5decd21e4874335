package bench

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/factline/factline/bus"
)

// memResult is B6: each service's resident set before and after the runs.
type memResult struct {
	before, after map[string]float64 // MiB
	heap          map[string]float64 // Go heap in use after the runs, MiB
	runs          int
	elapsed       time.Duration
}

// growth is the largest growth of any service, in MiB.
func (m memResult) growth() (string, float64) {
	worst, g := "", -1e9
	for _, n := range serviceNames {
		if d := m.after[n] - m.before[n]; d > g {
			worst, g = n, d
		}
	}
	return worst, g
}

// proc is a service process the benchmark started.
type proc struct {
	name    string
	cmd     *exec.Cmd
	out     *os.File
	metrics string // host:port of its /metrics
}

// startProcess starts `factline serve --services name` against url and
// waits until it says it is serving.
func startProcess(ctx context.Context, bin, name, url, dir string) (*proc, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	metricsAddr := ln.Addr().String()
	ln.Close()
	args := []string{"serve", "--services", name, "--nats", url, "--metrics", metricsAddr}
	if name == "runner" {
		args = append(args, "--instances", "64", "--work-dir", filepath.Join(dir, "work"))
	}
	logf, err := os.Create(filepath.Join(dir, name+".log"))
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, args...)
	cmd.Stderr = logf
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		logf.Close()
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		logf.Close()
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	p := &proc{name: name, cmd: cmd, out: logf, metrics: metricsAddr}
	ready := make(chan error, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if strings.HasPrefix(sc.Text(), "serving ") {
				ready <- nil
				_, _ = io.Copy(io.Discard, stdout)
				return
			}
		}
		ready <- fmt.Errorf("%s exited before serving (see %s)", name, logf.Name())
	}()
	select {
	case err = <-ready:
	case <-time.After(30 * time.Second):
		err = fmt.Errorf("%s not serving after 30s", name)
	case <-ctx.Done():
		err = ctx.Err()
	}
	if err != nil {
		p.stop()
		return nil, err
	}
	return p, nil
}

// stop ends the process it started: SIGTERM, then a kill after 10 s.
func (p *proc) stop() {
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { _ = p.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		_ = p.cmd.Process.Kill()
		<-done
	}
	p.out.Close()
}

// heapInUse reads go_memstats_heap_inuse_bytes from a process's metrics, in
// MiB: how much of its resident set is live Go heap.
func heapInUse(ctx context.Context, addr string) (float64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/metrics", nil)
	if err != nil {
		return 0, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "go_memstats_heap_inuse_bytes "); ok {
			v, err := strconv.ParseFloat(strings.TrimSpace(rest), 64)
			return v / (1 << 20), err
		}
	}
	return 0, errors.New("no go_memstats_heap_inuse_bytes in /metrics")
}

// rss reads a process's resident set size (VmRSS) in MiB.
func rss(pid int) (float64, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for line := range strings.Lines(string(data)) {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 64)
			if err != nil {
				return 0, fmt.Errorf("VmRSS %q: %w", rest, err)
			}
			return kb / 1024, nil
		}
	}
	return 0, errors.New("no VmRSS in /proc status")
}

// benchMemory runs each service as its own `factline serve` process against
// the server's TCP listener on loopback, and reads every process's RSS
// after start-up and again after runs completed 1-turn runs, submitted as
// suites of perSuite trials.
func benchMemory(ctx context.Context, b *bus.Bus, url, bin, dir string, runs, perSuite int, limit time.Duration) (memResult, error) {
	if err := os.MkdirAll(filepath.Join(dir, "work"), 0o755); err != nil {
		return memResult{}, err
	}
	var procs []*proc
	defer func() {
		for _, p := range procs {
			p.stop()
		}
	}()
	for _, n := range serviceNames {
		p, err := startProcess(ctx, bin, n, url, dir)
		if err != nil {
			return memResult{}, err
		}
		procs = append(procs, p)
	}
	res := memResult{before: map[string]float64{}, after: map[string]float64{}, heap: map[string]float64{}, runs: runs}
	// A warm-up suite settles what every process loads once (consumers,
	// caches, code paths) before the baseline is read.
	if err := submitSuite(ctx, b, dir, "b6-warm", 10, 1); err != nil {
		return res, err
	}
	if err := awaitReported(ctx, b, []string{"b6-warm"}, time.Minute); err != nil {
		return res, err
	}
	read := func(into map[string]float64) error {
		for _, p := range procs {
			v, err := rss(p.cmd.Process.Pid)
			if err != nil {
				return fmt.Errorf("%s: %w", p.name, err)
			}
			into[p.name] = v
		}
		return nil
	}
	if err := read(res.before); err != nil {
		return res, err
	}
	t0 := time.Now()
	var names []string
	for i := 0; i*perSuite < runs; i++ {
		name := fmt.Sprintf("b6-%d", i)
		if err := submitSuite(ctx, b, dir, name, min(perSuite, runs-i*perSuite), 1); err != nil {
			return res, err
		}
		names = append(names, name)
	}
	if err := awaitReported(ctx, b, names, limit); err != nil {
		return res, err
	}
	res.elapsed = time.Since(t0)
	if err := read(res.after); err != nil {
		return res, err
	}
	for _, p := range procs {
		h, err := heapInUse(ctx, p.metrics)
		if err != nil {
			return res, fmt.Errorf("%s: %w", p.name, err)
		}
		res.heap[p.name] = h
	}
	return res, nil
}
