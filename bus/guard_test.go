package bus_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/factline/factline/internal/testutil"
)

// Only the bus talks NATS: outside bus/, no program code imports nats.go.
// The exceptions are cmd/ (the binaries wire connections and credentials),
// bench/ (its baselines measure raw JetStream beside factline, by design)
// and tests. Services, cores, projections and libraries reach JetStream
// through the bus, so its rules (run-wide optimistic concurrency, subject
// checks, retries) cannot be bypassed.
func TestOnlyTheBusImportsNATS(t *testing.T) {
	allowed := []string{"bus", "cmd", "bench"}
	testutil.WalkGoFiles(t, "..", func(rel, path string) {
		top, _, _ := strings.Cut(rel, "/")
		if slices.Contains(allowed, top) || strings.HasSuffix(rel, "_test.go") {
			return
		}
		for _, p := range testutil.Imports(t, path) {
			if p == "github.com/nats-io/nats.go" || strings.HasPrefix(p, "github.com/nats-io/nats.go/") {
				t.Errorf("%s imports %s: reach JetStream through the bus", rel, p)
			}
		}
	})
}
