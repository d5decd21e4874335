//go:build linux

package main

import (
	"crypto/rand"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/factline/factline/internal/testutil"
)

// BenchmarkRunPeakRSS runs the factline binary on suites with one large
// input each and reports its peak resident set size (peak-MiB) and, where
// the input is accepted, the peak as a multiple of the input (x-input):
// memory must stay a small constant times the largest single input, and an
// input past its bound must be refused before it costs anything.
//
//	go test -run '^$' -bench BenchmarkRunPeakRSS -benchtime 1x ./cmd/factline/
func BenchmarkRunPeakRSS(b *testing.B) {
	bin := filepath.Join(b.TempDir(), "factline")
	if out, err := testutil.GoBuild(bin, ".").CombinedOutput(); err != nil {
		b.Fatalf("build: %v\n%s", err, out)
	}
	for _, c := range []struct {
		name   string
		input  int64                          // bytes of the large input
		make   func(b *testing.B, dir string) // writes the large input
		suite  string                         // extra suite keys
		refuse bool                           // the suite must be refused (exit 2)
	}{
		{name: "fixture-file-256MiB", input: 256 << 20, make: func(b *testing.B, dir string) {
			randomFile(b, filepath.Join(dir, "fx", "big.bin"), 256<<20)
		}},
		{name: "fixture-file-1023MiB", input: 1023 << 20, make: func(b *testing.B, dir string) {
			randomFile(b, filepath.Join(dir, "fx", "big.bin"), 1023<<20) // the workspace bound is 1 GiB
		}},
		{name: "description-50MB-refused", input: 50 << 20, refuse: true,
			suite: "description: " + strings.Repeat("d", 50<<20) + "\n"},
		{name: "trials-100000000-refused", refuse: true, suite: "trials: 100000000\n"},
	} {
		b.Run(c.name, func(b *testing.B) {
			dir := b.TempDir()
			writeBenchSuite(b, dir, c.suite)
			if c.make != nil {
				c.make(b, dir)
			}
			var peak int64
			for range b.N {
				cmd := exec.Command(bin, "run", filepath.Join(dir, "suite.yaml"), "--store", b.TempDir(), "--fsync", "interval")
				var out strings.Builder
				cmd.Stdout, cmd.Stderr = &out, &out
				hwm, err := runWatchingHWM(cmd)
				code := cmd.ProcessState.ExitCode()
				if c.refuse && code != 2 || !c.refuse && err != nil {
					b.Fatalf("exit %d (%v):\n%s", code, err, out.String())
				}
				peak = max(peak, hwm)
			}
			b.ReportMetric(float64(peak)/(1<<20), "peak-MiB")
			if c.input > 0 && !c.refuse {
				b.ReportMetric(float64(peak)/float64(c.input), "x-input")
			}
		})
	}
}

// writeBenchSuite writes a one-run suite: a case with the fixture fx, a
// scripted treatment that answers once.
func writeBenchSuite(b *testing.B, dir, extra string) {
	b.Helper()
	for name, body := range map[string]string{
		"suite.yaml":  "name: rss\ncases: [{path: c.yaml}]\ntreatments: [{path: t.yaml}]\n" + extra,
		"c.yaml":      "id: c\ninstruction: look at the fixture\nfixture: fx\n",
		"fx/note.txt": "a small file next to the large one\n",
		"t.yaml":      "id: t\nmodel: {provider: scripted, scripts: s}\n",
		"s/c.yaml":    "turns:\n  - {text: done}\n",
	} {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			b.Fatal(err)
		}
	}
}

func randomFile(b *testing.B, path string, size int64) {
	b.Helper()
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	if _, err := io.CopyN(f, rand.Reader, size); err != nil {
		b.Fatal(fmt.Errorf("write %s: %w", path, err))
	}
}

// runWatchingHWM runs cmd and returns the largest VmHWM (the peak resident
// set of the process's own memory) read from /proc while it ran. The
// rusage of a child is no use here: Linux carries the forking parent's
// peak into it across exec. VmHWM only grows, so the last read is the peak
// up to a few milliseconds before the exit.
func runWatchingHWM(cmd *exec.Cmd) (int64, error) {
	if err := cmd.Start(); err != nil {
		return 0, err
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	status := fmt.Sprintf("/proc/%d/status", cmd.Process.Pid)
	var peak int64
	tick := time.NewTicker(2 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case err := <-done:
			return peak, err
		case <-tick.C:
			data, err := os.ReadFile(status)
			if err != nil {
				continue
			}
			for _, l := range strings.Split(string(data), "\n") {
				if v, ok := strings.CutPrefix(l, "VmHWM:"); ok {
					var kb int64
					if _, err := fmt.Sscanf(strings.TrimSpace(v), "%d kB", &kb); err == nil {
						peak = max(peak, kb<<10)
					}
				}
			}
		}
	}
}
