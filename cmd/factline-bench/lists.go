package main

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/factline/factline/bus"
)

// The benchmarks take their sweeps as comma-separated flags; these read
// them, so that every list flag accepts the same spelling.

// counts parses a comma-separated list of positive counts (empty: none).
func counts(flagName, list string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(list, ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		n, err := strconv.Atoi(f)
		if err != nil || n < 1 {
			return nil, fmt.Errorf("%s: %q is not a positive count", flagName, f)
		}
		out = append(out, n)
	}
	return out, nil
}

// durabilities parses a comma-separated list of fsync modes. Its error is
// bus.ParseDurability's, which names the mode and the ones there are.
func durabilities(list string) ([]bus.Durability, error) {
	var out []bus.Durability
	for _, m := range strings.Split(list, ",") {
		d, err := bus.ParseDurability(strings.TrimSpace(m))
		if err != nil {
			return nil, err
		}
		out = append(out, d)
	}
	return out, nil
}
