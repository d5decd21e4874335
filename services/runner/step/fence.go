package step

import "fmt"

// Nanos is a span of time in nanoseconds. The core reads no clock and
// imports no time package: the shell measures spans on its monotonic
// clock, and the core decides on them.
type Nanos int64

// Units of Nanos.
const (
	Millisecond Nanos = 1_000_000
	Second            = 1000 * Millisecond
)

// The bounds of the fence around external effects (docs/resume.md).
const (
	// MinFenceMargin is the least part of the ack wait a send leaves
	// unused: what may pass between the decision to send and the request
	// leaving (a garbage-collection pause, a loaded host's scheduler),
	// and the drift between the runner's clock and the server's.
	MinFenceMargin = 500 * Millisecond
	// MinFenceWindow is the least time the fence needs for its check: an
	// in-progress ack the server confirms, then a read of the run's end
	// from the stream leader, two round trips that may each wait behind a
	// loaded server.
	MinFenceWindow = 1500 * Millisecond
	// MinAckWait is the shortest ack wait under which a runner can fence
	// its external effects: its fence window is MinFenceWindow.
	MinAckWait = MinFenceWindow + MinFenceMargin
)

// FenceMargin is the part of the ack wait a send leaves unused: a tenth
// of it, and at least MinFenceMargin.
func FenceMargin(ackWait Nanos) Nanos { return max(MinFenceMargin, ackWait/10) }

// FenceWindow is how long after the sending of an in-progress ack that
// the server confirmed an external send may still start: the ack wait
// less the margin. The server took the ack after it was sent, and hands
// the delivery to nobody else until the ack wait has passed since.
func FenceWindow(ackWait Nanos) Nanos { return ackWait - FenceMargin(ackWait) }

// Hold is what a runner knows of its hold on a run just before it sends
// an external effect. CheckedAt and Now are measured from the sending of
// the newest in-progress ack of the run's delivery that the server
// confirmed while the hold was unbroken.
type Hold struct {
	// AckWait is the consumer's ack wait.
	AckWait Nanos
	// Renewed says the server confirmed such an ack. Without one (none
	// confirmed, or one confirmed only after the hold may have run out)
	// the delivery may be another runner's.
	Renewed bool
	// Checked says a read of the run's newest facts, made from the stream
	// leader, found this attempt's claim the run's newest and the run not
	// ended.
	Checked bool
	// CheckedAt is when that read started.
	CheckedAt Nanos
	// Now is when the send would start.
	Now Nanos
}

// maySend says why an external effect may not be sent now, or "" when it
// may: the server confirmed the hold, a check of the run's newest claim
// made since then found it this attempt's, and the send starts within the
// fence window of the confirmed ack. Another runner is handed the run only
// once the ack wait has passed without an ack, and sends only after it
// claimed the run, which the check would have seen; a runner that takes
// the run over after this window waits out the effect's settle window
// before it believes a lookup that finds nothing (notFoundWait).
func maySend(h Hold) string {
	switch {
	case h.AckWait < MinAckWait:
		return fmt.Sprintf("the ack wait %s is shorter than the %s a fence needs", span(h.AckWait), span(MinAckWait))
	case !h.Renewed:
		return "the server has not confirmed this runner's hold on the run"
	case !h.Checked:
		return "the run's newest claim was not checked"
	case h.CheckedAt < 0:
		return "the run's newest claim was checked before the hold was confirmed"
	case h.Now < h.CheckedAt:
		return "the send would start before the check of the run's newest claim"
	case h.Now >= FenceWindow(h.AckWait):
		return fmt.Sprintf("%s passed since the hold was confirmed; a send must start within %s (the ack wait %s less a margin of %s)",
			span(h.Now), span(FenceWindow(h.AckWait)), span(h.AckWait), span(FenceMargin(h.AckWait)))
	}
	return ""
}

// notFoundWait is how much longer a status lookup that finds nothing is no
// proof that an operation never took effect. Until quiet, no request of
// it can still be on its way to the sink (every send that may have left
// has given up waiting, or the runner that may have sent it lost its hold
// that long before), and a slow sink may still apply what it received for
// settle after that. sinceQuiet is the time since quiet (negative before
// it); zero means the lookup's answer holds.
func notFoundWait(sinceQuiet, settle Nanos) Nanos { return max(0, settle-sinceQuiet) }

// span prints a span in whole seconds, or else in milliseconds.
func span(n Nanos) string {
	if n%Second == 0 {
		return fmt.Sprintf("%ds", n/Second)
	}
	return fmt.Sprintf("%dms", n/Millisecond)
}
