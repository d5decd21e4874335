package runner

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/factline/factline/bus"
	"github.com/factline/factline/cases"
	"github.com/factline/factline/services/runner/step"
	"github.com/factline/factline/services/runner/tools"
)

// MinAckWait is the shortest ack wait a runner takes: under a shorter one
// it could not fence its external effects (see fence).
const MinAckWait = time.Duration(step.MinAckWait)

// AckWaitError refuses an ack wait too short for a runner to fence its
// external effects.
type AckWaitError struct {
	// AckWait is the ack wait refused.
	AckWait time.Duration
}

func (e *AckWaitError) Error() string {
	return fmt.Sprintf("ack wait %v is too short for a runner: it must be at least %v, because before each external effect a runner "+
		"has the server confirm its hold on the run and reads the run's newest claim from the stream leader, within %v, "+
		"and sends only with at least %v of the ack wait to spare (docs/resume.md#fencing-external-effects)",
		e.AckWait, MinAckWait, time.Duration(step.MinFenceWindow), time.Duration(step.MinFenceMargin))
}

// CheckAckWait returns an *AckWaitError when a runner cannot fence its
// external effects under ack wait d (zero: the consumer's default, 30s).
func CheckAckWait(d time.Duration) error {
	if d != 0 && d < MinAckWait {
		return &AckWaitError{AckWait: d}
	}
	return nil
}

// errUnfenced says an external effect was not sent because the attempt
// could not confirm in time that the run is still its own (the bus failed,
// or the core found the fence does not hold: step.EffectHandBack). The run is
// handed back and resumed from the log, where the operation is reconciled
// like any other whose outcome is unknown.
var errUnfenced = errors.New("not sent: the hold on the run could not be confirmed in time")

// fence confirms, just before an external effect is sent (the first time
// or again), that no other runner can hold the run, and says what it
// found for step.Effect to judge (AfterFence): the server confirms an
// in-progress ack of this attempt's delivery, with its lease unbroken
// since the delivery (bus.Lease), and a read of the run's end from the
// stream leader, started after that, finds this attempt's claim the
// newest. The send may then start only within the fence window of the
// confirmed ack: until the ack wait has passed since the server took it,
// it hands the delivery to nobody else, and a runner that takes the run
// over after that waits out the effect's settle window before it believes
// a status lookup that finds nothing (step.Settling).
//
// A lease that lapsed means another runner may hold the run: ErrLeaseLost.
// A check that failed sends nothing either: errUnfenced, wrapping the
// bus's error (the delivery is then run again in place while its lease
// holds). A check that took too long is the core's to refuse.
func (a *attempt) fence(ctx context.Context) (step.Hold, error) {
	l := a.hold
	if l == nil {
		return step.Hold{}, fmt.Errorf("%w: the attempt holds no delivery of the run", errUnfenced)
	}
	ackWait := step.Nanos(l.AckWait())
	window := time.Duration(step.FenceWindow(ackWait))
	rctx, cancel := context.WithTimeout(ctx, window)
	renewed, err := l.Renew(rctx)
	cancel()
	if errors.Is(err, bus.ErrLeaseLapsed) {
		return step.Hold{}, fmt.Errorf("%w: %w", ErrLeaseLost, err)
	}
	if err != nil {
		return step.Hold{}, fmt.Errorf("%w: %w", errUnfenced, err)
	}
	checked := time.Now()
	cctx, cancel := context.WithDeadline(ctx, renewed.Add(window))
	defer cancel()
	end, err := a.svc.bus.RunEnd(cctx, a.suite, a.run)
	if err != nil {
		return step.Hold{}, fmt.Errorf("%w: %w", errUnfenced, err)
	}
	if end != a.seen {
		// Someone appended since this attempt last read or wrote the run:
		// a takeover's claim, or the run's end, would be there.
		log, err := a.svc.runs.LoadThrough(cctx, a.suite, a.run, end)
		if err != nil {
			return step.Hold{}, fmt.Errorf("%w: %w", errUnfenced, err)
		}
		a.seen = max(a.seen, log.LastSeq)
		if err := a.holds(log, false); err != nil {
			return step.Hold{}, err
		}
	}
	now := time.Now()
	return step.Hold{AckWait: ackWait, Renewed: true, Checked: true,
		CheckedAt: step.Nanos(checked.Sub(renewed)), Now: step.Nanos(now.Sub(renewed))}, nil
}

// settling is where a status lookup of an operation stands against the
// case's settle window now, quiet being the moment after which no request
// of it can still be on its way to the sink. A run given up may have no
// case (it could not be read): the default window then.
func (a *attempt) settling(quiet time.Time) step.Settling {
	var h *cases.HTTPPolicy
	if a.kase != nil {
		h = a.kase.HTTP
	}
	return step.Settling{SinceQuiet: step.Nanos(time.Since(quiet)), Window: step.Nanos(h.SettleWindow())}
}

// lookAfter makes the status lookup of op once wait has passed: the rest
// of the settle window, when an earlier lookup found nothing within it
// (step.Settling), and then what it finds not applied is noted as found
// past the window.
func (a *attempt) lookAfter(ctx context.Context, op string, wait step.Nanos) (step.Finding, string, error) {
	if wait > 0 {
		a.svc.log.Info("the status lookup found nothing within the settle window; looking again once it has passed",
			"suite", a.suite, "run", a.run, "operation", op, "wait", time.Duration(wait))
		if err := sleep(ctx, time.Duration(wait)); err != nil {
			return step.FoundNothing, "", err
		}
	}
	f, note := a.lookup(ctx, op)
	if wait > 0 && f == step.FoundNotApplied {
		note += ", past the settle window"
	}
	return f, note, nil
}

// sleep waits d, or until ctx is done.
func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// inFlight bounds how long a send of tool may still be on its way: the
// tool's timeout (the case's http.timeout for http_call).
func (a *attempt) inFlight(tool string) time.Duration {
	if a.registry != nil {
		if t, ok := a.registry.Lookup(tool); ok && t.Contract().Timeout > 0 {
			return t.Contract().Timeout
		}
	}
	if a.kase != nil && a.kase.HTTP != nil && a.kase.HTTP.Timeout > 0 {
		return a.kase.HTTP.Timeout.Std()
	}
	return tools.DefaultHTTPTimeout
}
