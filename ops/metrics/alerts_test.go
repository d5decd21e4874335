package metrics

import (
	"os/exec"
	"testing"
)

// The alert rules are valid, and each fires on the scenario built to
// trigger it and stays silent on its near miss (ops/prometheus/
// alerts_test.yaml, run by Prometheus's own promtool).
func TestAlertRules(t *testing.T) {
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		t.Fatal("promtool is not installed: install Debian's prometheus package (scripts/test-deps, which make test runs first, does)")
	}
	for _, args := range [][]string{
		{"check", "rules", "alerts.yaml"},
		{"test", "rules", "alerts_test.yaml"},
	} {
		cmd := exec.Command(promtool, args...)
		cmd.Dir = "../prometheus"
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("promtool %v: %v\n%s", args, err, out)
		}
	}
}

// A tool's run time lands in a finite bucket up to the longest a command
// may run (run_command's 600 s bound), not only in +Inf: the top bucket was
// 4 s while checks run for up to 30 s.
func TestToolHistogramCoversTheLongestCommand(t *testing.T) {
	if top := toolBuckets[len(toolBuckets)-1]; top < 600 {
		t.Fatalf("the tool histogram's top bucket is %vs, below run_command's 600s bound", top)
	}
}
