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

// A measurement build only (go build -tags factline_heapprof): with
// FACTLINE_HEAPPROF_DIR set, the process writes a heap profile there
// every FACTLINE_HEAPPROF_EVERY seconds (default 5), named by the seconds
// since it started, to attribute a suite's memory
// (docs/benchmarks.md#suite-size). No product build holds it.
func init() {
	dir := os.Getenv("FACTLINE_HEAPPROF_DIR")
	if dir == "" {
		return
	}
	every := 5 * time.Second
	if s, err := strconv.Atoi(os.Getenv("FACTLINE_HEAPPROF_EVERY")); err == nil && s > 0 {
		every = time.Duration(s) * time.Second
	}
	start := time.Now()
	go func() {
		for range time.Tick(every) {
			name := filepath.Join(dir, fmt.Sprintf("heap-%05d.pb.gz", int(time.Since(start).Seconds())))
			f, err := os.Create(name)
			if err != nil {
				fmt.Fprintf(os.Stderr, "heap profile: %v\n", err)
				return
			}
			if err := pprof.Lookup("heap").WriteTo(f, 0); err != nil {
				fmt.Fprintf(os.Stderr, "heap profile %s: %v\n", name, err)
			}
			f.Close()
		}
	}()
}
