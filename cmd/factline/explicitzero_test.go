package main

import (
	"strings"
	"testing"
)

// These flags read 0 as "not given": an explicit 0 asked for none at all
// and silently got the default (30s, 5 deliveries, the default window). It
// is a mistake in the call, refused before connecting.
func TestAnExplicitZeroOfAFlagWhoseZeroMeansDefaultIsRefused(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{
		{"serve", "--services", "runner", "--ack-wait", "0s"},
		{"serve", "--services", "runner", "--max-deliver", "0"},
		{"serve", "--services", "meter", "--request-window", "0"},
		{"serve", "--services", "runner", "--model-slot-lease", "0"},
		{"run", "suite.yaml", "--request-window", "0"},
	} {
		flag := args[len(args)-2]
		args = append(args, "--nats", "nats://127.0.0.1:1")
		code, _, errOut := runCLI(t, args...)
		if code != 2 || !strings.Contains(errOut, flag+" 0") || !strings.Contains(errOut, "leave the flag out for its default") {
			t.Errorf("factline %v: exit %d, stderr %q; want exit 2 naming %s and its default", args, code, errOut, flag)
		}
	}
}
