//go:build factline_heapprof

package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/pprof"
	"strconv"
	"time"
)

// A measurement build only (go build -tags factline_heapprof); no
// product build holds it. With FACTLINE_HEAPPROF_DIR set, the process
// writes a heap profile there every FACTLINE_HEAPPROF_EVERY seconds
// (default 5), to attribute a suite's memory
// (docs/benchmarks.md#suite-size). With FACTLINE_CPUPROF_DIR set, it
// profiles its CPU in back-to-back windows of FACTLINE_CPUPROF_EVERY
// seconds (default 30), so an early window and a late one of a long
// suite can be compared (docs/benchmarks.md#why-the-rate-falls-profiled);
// the last, unfinished window is lost when the process exits. Each
// profile is named by the seconds since the process started when it was
// written: heap-SSSSS.pb.gz, cpu-SSSSS.pb.gz.
func init() {
	if dir, every, ok := profiling("FACTLINE_HEAPPROF", 5*time.Second); ok {
		go profileEach(dir, "heap", func(w io.Writer) error {
			time.Sleep(every)
			return pprof.Lookup("heap").WriteTo(w, 0)
		})
	}
	if dir, every, ok := profiling("FACTLINE_CPUPROF", 30*time.Second); ok {
		go profileEach(dir, "cpu", func(w io.Writer) error {
			if err := pprof.StartCPUProfile(w); err != nil {
				return err
			}
			time.Sleep(every)
			pprof.StopCPUProfile()
			return nil
		})
	}
}

// profiling reads a measurement's settings from the environment: the
// directory PREFIX_DIR (ok false when unset: no profiling) and the
// period PREFIX_EVERY in seconds (def when unset or not a positive
// number).
func profiling(prefix string, def time.Duration) (dir string, every time.Duration, ok bool) {
	dir = os.Getenv(prefix + "_DIR")
	if dir == "" {
		return "", 0, false
	}
	every = def
	if s, err := strconv.Atoi(os.Getenv(prefix + "_EVERY")); err == nil && s > 0 {
		every = time.Duration(s) * time.Second
	}
	return dir, every, true
}

// profileEach writes profiles into dir one after another until one
// fails: each is what write writes, named kind-SSSSS.pb.gz by the seconds
// since the loop began when write returned. A profile is renamed to its
// name once whole, so it is either all there or absent.
func profileEach(dir, kind string, write func(io.Writer) error) {
	start := time.Now()
	tmp := filepath.Join(dir, kind+"-current.pb.gz.tmp")
	for {
		f, err := os.Create(tmp)
		if err != nil {
			fmt.Fprintf(os.Stderr, "%s profile: %v\n", kind, err)
			return
		}
		err = write(f)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		name := filepath.Join(dir, fmt.Sprintf("%s-%05d.pb.gz", kind, int(time.Since(start).Seconds())))
		if err == nil {
			err = os.Rename(tmp, name)
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "%s profile %s: %v\n", kind, name, err)
			return
		}
	}
}
