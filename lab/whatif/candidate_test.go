package whatif_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/factline/factline/cases"
	"github.com/factline/factline/lab/whatif"
)

func TestACandidateFileIsAStallBlockNamedByItsFile(t *testing.T) {
	c, err := whatif.ParseCandidate("policies/patient.yaml", []byte("stall:\n  repeated_observation: 5\n  repair_budget: 3\n"))
	if err != nil {
		t.Fatal(err)
	}
	if c.Name != "patient" || *c.Stall.RepeatedObservation != 5 || *c.Stall.RepairBudget != 3 || c.Stall.IdleTurns != nil {
		t.Fatalf("candidate %+v", c)
	}
}

func TestABadCandidateFileIsRefusedNamingFileAndField(t *testing.T) {
	for _, tc := range []struct{ name, data, field, msg string }{
		{"neg.yaml", "stall:\n  repair_budget: -1\n", "stall.repair_budget", "negative"},
		{"typo.yaml", "stall:\n  repeated_obs: 2\n", "stall.repeated_obs", "unknown key"},
		{"frac.yaml", "stall:\n  idle_turns: 2.5\n", "stall.idle_turns", "whole number"},
		{"x.yaml", "name: recorded\nstall: {}\n", "name", "recorded policy"},
		{"x.yaml", "name: has space\n", "name", "character ' '"},
	} {
		_, err := whatif.ParseCandidate(tc.name, []byte(tc.data))
		var e *cases.Error
		if !errors.As(err, &e) || e.File != tc.name || e.Field != tc.field || !strings.Contains(e.Msg, tc.msg) {
			t.Errorf("%s %q: %v, want an error at %s saying %q", tc.name, tc.data, err, tc.field, tc.msg)
		}
		// The field is named once: "name: name: …" named it twice.
		if e != nil && strings.HasPrefix(e.Msg, tc.field+": ") {
			t.Errorf("%s %q: %v names the field %s twice", tc.name, tc.data, err, tc.field)
		}
	}
}
