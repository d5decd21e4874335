package main

import (
	"os"
	"strings"
	"testing"
)

// Each flag that names fsync modes refuses one that is not a mode, before
// a benchmark starts: the table's --modes and --b6-modes, and scaling's
// --modes. Not parallel: run reads os.Args.
func TestEveryModesFlagRefusesAnUnknownMode(t *testing.T) {
	saved := os.Args
	t.Cleanup(func() { os.Args = saved })
	for _, args := range []string{
		"--modes always,sometimes",
		"--b6-modes interval,never",
		"scaling --modes sometimes",
	} {
		os.Args = append([]string{"factline-bench"}, strings.Fields(args)...)
		err := run()
		if err == nil || !strings.Contains(err.Error(), "durability") {
			t.Errorf("%s: err = %v, want one naming the durability", args, err)
		}
	}
}

// A list of modes may space its commas, and names each mode once per
// mention, in order.
func TestDurabilitiesReadsACommaList(t *testing.T) {
	got, err := durabilities("always, interval")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0] != "always" || got[1] != "interval" {
		t.Errorf("durabilities = %v, want [always interval]", got)
	}
}
