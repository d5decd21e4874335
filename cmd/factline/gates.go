package main

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/pflag"

	"github.com/factline/factline/services/meter/measure"
)

// gateFlags are the thresholds run and compare hold a suite to, and the
// JUnit file they write (docs/report.md#gates).
type gateFlags struct {
	under, worse []string
	junit        string
}

func (g *gateFlags) flags(fs *pflag.FlagSet, worseHelp string) {
	fs.StringArrayVar(&g.under, "fail-under", nil, "exit 3 when a pass rate is under RATE (0.8 or 80%), or with scorer=NAME:VALUE a scorer's mean is worse than VALUE; repeatable")
	fs.StringArrayVar(&g.worse, "fail-if-worse", nil, worseHelp)
	fs.StringVar(&g.junit, "junit", "", "also write one JUnit test case per attempt (case/treatment/trial) to this file, for CI")
}

// given says whether any gate was asked for.
func (g *gateFlags) given() bool { return len(g.under)+len(g.worse) > 0 }

// parse reads the gates; a value that cannot be read is a usage error
// naming the flag and the value.
func (g *gateFlags) parse() ([]measure.Gate, error) {
	var out []measure.Gate
	for _, f := range []struct {
		kind   measure.GateKind
		values []string
	}{{measure.GateUnder, g.under}, {measure.GateWorse, g.worse}} {
		for _, v := range f.values {
			gate, err := measure.ParseGate(f.kind, v)
			if err != nil {
				return nil, usageError{err.Error()}
			}
			out = append(out, gate)
		}
	}
	return out, nil
}

// writeJUnit writes the report's JUnit file when --junit asks for one.
func (g *gateFlags) writeJUnit(r measure.Report) error {
	return g.writeJUnitWith(func(w io.Writer) error { return measure.WriteJUnit(w, r) })
}

// writeJUnitWith writes --junit's file with write, when it asks for one.
func (g *gateFlags) writeJUnitWith(write func(io.Writer) error) error {
	if g.junit == "" {
		return nil
	}
	if err := writeFile(g.junit, write); err != nil {
		return fmt.Errorf("--junit %s not written: %w", g.junit, err)
	}
	return nil
}

// verdict is how a measured suite ends the command: every attempt a
// harness error (exit 5), the report not complete (exit 4), a gate that
// does not hold (exit 3), or nil. Which suite it speaks of is what.
func verdict(what string, r measure.Report, failures []measure.GateFailure) error {
	planned, harness := 0, 0
	for _, t := range r.Treatments {
		planned += t.Planned
		harness += t.HarnessErrors
	}
	if planned > 0 && harness == planned {
		return exitWith(exitAllHarnessErrors, "every one of %s's %d attempts ended as a harness error (errored): it measured the harness, not the agent; "+
			"see the reasons above, then 'factline retry %s'", what, planned, r.Suite)
	}
	if !r.Complete {
		return exitWith(exitIncomplete, "%s is not complete (%s): its figures may still move, so no gate is decided on them", what, r.State())
	}
	if len(failures) == 0 {
		return nil
	}
	lines := make([]string, len(failures))
	for i, f := range failures {
		lines[i] = f.Gate + ": " + f.Detail
	}
	return &exitError{code: exitGateFailed, err: errors.New("gate failed: " + strings.Join(lines, "; "))}
}
