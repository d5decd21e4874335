package whatif_test

import (
	"os/exec"
	"strings"
	"testing"
)

// The lab is pure: nothing it depends on, however indirectly, speaks to
// NATS or the bus, so a replay can run anywhere a log's facts can be read.
func TestTheLabDependsOnNoBus(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}}", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	deps := strings.Fields(string(out))
	if len(deps) < 10 {
		t.Fatalf("go list found only %v", deps)
	}
	for _, d := range deps {
		if strings.HasPrefix(d, "github.com/nats-io/") || d == "github.com/factline/factline/bus" {
			t.Errorf("the lab depends on %s", d)
		}
	}
}
