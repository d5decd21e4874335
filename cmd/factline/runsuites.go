package main

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/factline/factline/bus"
	"github.com/factline/factline/events"
)

// checkSuiteFlag refuses a --suite that can be no subject token: it
// would match no fact, and the command would say only that it found
// nothing.
func checkSuiteFlag(suite string) error {
	if suite == "" {
		return nil
	}
	if err := events.ValidateToken("suite", suite); err != nil {
		return usageError{fmt.Sprintf("--suite %q: %v", suite, err)}
	}
	return nil
}

// suitesOfRunIn returns the suites that start a run of the ID, in the
// order they started it: from the store or server b, or, when b is nil,
// from the export file. Run IDs are unique within a suite only, so a
// command that reads a run by its ID alone asks this first.
func suitesOfRunIn(ctx context.Context, b *bus.Bus, file, run string) ([]string, error) {
	if b != nil {
		return b.SuitesOfRun(ctx, run)
	}
	f, err := os.Open(file)
	if err != nil {
		return nil, fileError{fmt.Errorf("--file: %w", err)}
	}
	defer f.Close()
	var suites []string
	err = bus.ReadExport(f, func(r bus.Raw) error {
		suite, id, kind, err := events.ParseFactSubject(r.Subject)
		if err == nil && id == run && (kind == events.KindRunRequested || kind == events.KindRunDelegated) && !slices.Contains(suites, suite) {
			suites = append(suites, suite)
		}
		return ctx.Err()
	})
	if err != nil {
		return nil, fmt.Errorf("find the suites of run %q in %s: %w", run, file, err)
	}
	return suites, nil
}

// suiteOfRun picks the suite of a run a command reads by its ID: the one
// --suite names, which must hold a run of the ID when any suite does, or
// else the one suite that does. Several suites without --suite is an
// *bus.AmbiguousRunError naming them. No suite holding a start of the run
// (a partial import) leaves suite as given, "" for any.
func suiteOfRun(suite, run string, suites []string) (string, error) {
	switch {
	case len(suites) == 0:
		return suite, nil
	case suite != "":
		if !slices.Contains(suites, suite) {
			return "", fmt.Errorf("suite %q holds no run %q; the suites that do: %s", suite, run, strings.Join(suites, ", "))
		}
		return suite, nil
	case len(suites) > 1:
		return "", &bus.AmbiguousRunError{Run: run, Suites: suites}
	}
	return suites[0], nil
}
