package bench

import (
	"os"
	"path/filepath"
	"runtime/pprof"
)

// startProfile writes a CPU profile of one part to dir/<name>.pprof (read it
// with `go tool pprof`); with no dir it does nothing.
func startProfile(dir, name string) (stop func()) {
	if dir == "" {
		return func() {}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return func() {}
	}
	f, err := os.Create(filepath.Join(dir, name+".pprof"))
	if err != nil {
		return func() {}
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return func() {}
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}
}
