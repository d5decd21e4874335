//go:build factline_heapprof

package main

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime/pprof"
	"strconv"
	"time"
)

// A measurement build only (go build -tags factline_heapprof), beside
// heapprof.go: with FACTLINE_CPUPROF_DIR set, the process profiles its CPU
// in back-to-back windows of FACTLINE_CPUPROF_EVERY seconds (default 30),
// each written as cpu-SSSSS.pb.gz named by the seconds since it started
// when the window closed, so an early window and a late one of a long
// suite can be compared (docs/benchmarks.md#why-the-rate-falls-profiled).
// The last, unfinished window is lost when the process exits. No product
// build holds it.
func init() {
	dir := os.Getenv("FACTLINE_CPUPROF_DIR")
	if dir == "" {
		return
	}
	every := 30 * time.Second
	if s, err := strconv.Atoi(os.Getenv("FACTLINE_CPUPROF_EVERY")); err == nil && s > 0 {
		every = time.Duration(s) * time.Second
	}
	start := time.Now()
	go func() {
		for {
			tmp := filepath.Join(dir, "cpu-current.pb.gz.tmp")
			f, err := os.Create(tmp)
			if err != nil {
				fmt.Fprintf(os.Stderr, "cpu profile: %v\n", err)
				return
			}
			if err := pprof.StartCPUProfile(f); err != nil {
				fmt.Fprintf(os.Stderr, "cpu profile: %v\n", err)
				f.Close()
				return
			}
			time.Sleep(every)
			pprof.StopCPUProfile()
			f.Close()
			// Renamed once whole, so a window is either all there or absent.
			name := filepath.Join(dir, fmt.Sprintf("cpu-%05d.pb.gz", int(time.Since(start).Seconds())))
			if err := os.Rename(tmp, name); err != nil {
				fmt.Fprintf(os.Stderr, "cpu profile %s: %v\n", name, err)
				return
			}
		}
	}()
}
