package main

import (
	"strings"
	"testing"
)

// A scaling run with a configuration that names no stream, or a count
// that is not one, stops before it starts a cluster, naming the flag.
func TestScalingRefusesBadStreamCounts(t *testing.T) {
	for args, want := range map[string]string{
		"--streams 0":              "--streams",
		"--streams 1,x":            "--streams",
		"--one-leader -2":          "--one-leader",
		"--streams= --one-leader=": "names no configuration",
		"--modes always,sometimes": "durability",
	} {
		err := runScaling(strings.Fields(args))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: err = %v, want one naming %q", args, err, want)
		}
	}
}
