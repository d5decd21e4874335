package fileerr_test

import (
	"errors"
	"testing"

	"github.com/factline/factline/internal/fileerr"
)

var errA, errB = errors.New("invalid a"), errors.New("invalid b")

type kindA struct{}

func (kindA) Invalid() error { return errA }

type kindB struct{}

func (kindB) Invalid() error { return errB }

// The message names the file, then the line and the field where they are
// known, then what is wrong.
func TestAnErrorNamesFileLineAndField(t *testing.T) {
	for _, c := range []struct {
		err  fileerr.Error[kindA]
		want string
	}{
		{fileerr.Error[kindA]{File: "case.yaml", Line: 4, Field: "checks[1].command", Msg: "required"}, "case.yaml:4: checks[1].command: required"},
		{fileerr.Error[kindA]{File: "case.yaml", Field: "fixture", Msg: "not a directory"}, "case.yaml: fixture: not a directory"},
		{fileerr.Error[kindA]{File: "case.yaml", Line: 2, Msg: "bad YAML"}, "case.yaml:2: bad YAML"},
	} {
		if got := c.err.Error(); got != c.want {
			t.Errorf("%+v renders %q, want %q", c.err, got, c.want)
		}
	}
}

// Each kind matches its own sentinel only, and errors.As tells the kinds
// apart: a suite's problem is never taken for a case's.
func TestKindsStayApart(t *testing.T) {
	var err error = &fileerr.Error[kindA]{File: "f", Msg: "m"}
	if !errors.Is(err, errA) || errors.Is(err, errB) {
		t.Errorf("an error of kind A matches errA %v, errB %v", errors.Is(err, errA), errors.Is(err, errB))
	}
	var b *fileerr.Error[kindB]
	if errors.As(err, &b) {
		t.Error("an error of kind A was taken for one of kind B")
	}
}
