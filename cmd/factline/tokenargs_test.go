package main

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A run ID or suite name that can never be one (a dot, a wildcard, '_'
// leading a run ID, 129 bytes) is a mistake in the call: exit 2 naming
// the argument, as 'suite pause' and 'tail --run' already did, before
// any store is opened or made (docs/cli.md#the-command-line).
func TestARunOrSuiteThatCanBeNoSubjectTokenIsAUsageError(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("a", 129)
	for _, args := range [][]string{
		{"cancel", "a.b"},
		{"cancel", "*"},
		{"cancel", "_suite"},
		{"steer", ">", "also test it"},
		{"reject", "a.b", "op-1"},
		{"resolve", long, "op-1", "--applied"},
		{"approve", "a*b", "op-1", "--args-digest", "sha256:" + strings.Repeat("0", 64)},
		{"report", "a.b"},
		{"report", "fact.>"},
		{"retry", "a.b"},
		{"regrade", "a.b", "--grading", "g.yaml"},
	} {
		store := filepath.Join(t.TempDir(), "none")
		code, out, errOut := runCLI(t, append(args, "--store", store)...)
		if code != 2 || !strings.Contains(errOut, args[1]) || !strings.Contains(errOut, "subject token") && !strings.Contains(errOut, "reserved") || out != "" {
			t.Errorf("factline %s: exit %d, stdout %q, stderr %q; want exit 2 naming the argument", strings.Join(args, " "), code, out, errOut)
		}
		if _, err := os.Stat(store); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("factline %s made the store %s before refusing its argument (%v)", strings.Join(args, " "), store, err)
		}
	}
}
