package testutil

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"
)

var natsd struct {
	once sync.Once
	dir  string
	path string
	err  error
}

// NatsdBinary builds the natsd command (internal/testutil/natsd: the
// embedded server as a process of its own) once per test process and
// returns its path. A package's TestMain calls RemoveBuilt after its tests.
func NatsdBinary() (string, error) {
	natsd.once.Do(func() {
		natsd.dir, natsd.err = os.MkdirTemp("", "factline-natsd-")
		if natsd.err != nil {
			return
		}
		natsd.path = filepath.Join(natsd.dir, "natsd")
		if out, err := GoBuild(natsd.path, "github.com/factline/factline/internal/testutil/natsd").CombinedOutput(); err != nil {
			natsd.err = fmt.Errorf("go build natsd: %w\n%s", err, out)
		}
	})
	return natsd.path, natsd.err
}

// NatsdListening is the line natsd prints once it accepts clients.
const NatsdListening = "natsd listening on"

// RemoveBuilt removes what NatsdBinary built.
func RemoveBuilt() {
	if natsd.dir != "" {
		_ = os.RemoveAll(natsd.dir)
	}
}
