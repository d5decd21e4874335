package runner

import (
	"context"
	"errors"
	"fmt"

	"github.com/factline/factline/events"
	"github.com/factline/factline/services/runner/extensions"
)

// startExtensions starts the run's admitted extensions (one server process
// each, for this run alone, in the workspace), offers their allowlisted
// tools to the model and records the extensions in the claim (the agent
// identity they make is claimIdentity's). A server that does not come up ends
// the run as bad input; a shutdown meanwhile hands the run back.
func (a *attempt) startExtensions(ctx context.Context, admitted []extensions.Entry, environ []string, claim *events.RunClaimed) error {
	if len(admitted) == 0 {
		return nil
	}
	set, err := extensions.Start(ctx, admitted, extensions.Options{Dir: a.ws.Root(), Environ: environ, LogDir: a.dir,
		Logger: a.svc.log.With("suite", a.suite, "run", a.run), Secrets: a.svc.secrets})
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("%w: %w", errBadInput, err)
	}
	a.exts = set
	fail := func(err error) error {
		set.Stop()
		return fmt.Errorf("%w: %w", errBadInput, err)
	}
	for _, t := range set.Tools() {
		if err := a.registry.Add(t); err != nil {
			// The extension's name: the error names the tool.
			ext := t.Contract().Name
			if et, ok := t.(*extensions.Tool); ok {
				ext = et.Extension()
			}
			return fail(&extensions.StartError{Extension: ext, Err: err})
		}
	}
	claim.Extensions = set.Records()
	return nil
}

// startReason is the run.ended reason of a run that could not start:
// an extension's typed reason (extension_rejected: …, extension_failed: …)
// as it is, anything else as the error says.
func startReason(err error) string {
	var rej *extensions.Rejection
	if errors.As(err, &rej) {
		return rej.Error()
	}
	var se *extensions.StartError
	if errors.As(err, &se) {
		return se.Error()
	}
	return err.Error()
}
