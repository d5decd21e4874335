package cases

import (
	"reflect"
	"testing"
)

func TestNeedsListRequirementsThenUnnamedRequiredChecksThenTheWrite(t *testing.T) {
	no, yes := false, true
	c := &Case{
		Checks: []Check{
			{ID: "unit"},
			{ID: "lint"},
			{ID: "style", Required: &no},
			{ID: "api"},
		},
		Requirements: []Requirement{
			{ID: "api", Check: "unit"},
			{ID: "docs"},
		},
		RequiresWrite: &yes,
	}
	want := []Need{
		{ID: "api", Check: "unit"},
		{ID: "docs"},
		{ID: "lint", Check: "lint"},
		{ID: "api-check", Check: "api"},
		{ID: WriteNeedID, Write: true},
	}
	if got := c.Needs(); !reflect.DeepEqual(got, want) {
		t.Fatalf("Needs() = %+v\nwant %+v", got, want)
	}
}

func TestNeedsLeaveOutTheWriteWhenARequirementTookItsName(t *testing.T) {
	yes := true
	c := &Case{Requirements: []Requirement{{ID: WriteNeedID}}, RequiresWrite: &yes}
	if got := c.Needs(); len(got) != 1 || got[0].Write {
		t.Fatalf("Needs() = %+v, want only the declared requirement", got)
	}
}
