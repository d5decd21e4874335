package step

import (
	"strings"
	"testing"
)

// held is a hold that allows a send: confirmed, checked after the
// confirmation, the send a moment after the check.
func held(ackWait Nanos) Hold {
	return Hold{AckWait: ackWait, Renewed: true, Checked: true, CheckedAt: 10 * Millisecond, Now: 20 * Millisecond}
}

// A send may start while the hold is confirmed, checked and within the
// window.
func TestMaySendUnderAConfirmedCheckedHold(t *testing.T) {
	for _, aw := range []Nanos{MinAckWait, 5 * Second, 30 * Second} {
		if why := maySend(held(aw)); why != "" {
			t.Errorf("ack wait %s: refused: %s", span(aw), why)
		}
	}
}

// No send without a hold the server confirmed: an ack that was only sent
// may never have reached it.
func TestNoSendWithoutAConfirmedHold(t *testing.T) {
	h := held(5 * Second)
	h.Renewed = false
	if why := maySend(h); !strings.Contains(why, "not confirmed") {
		t.Fatalf("an unconfirmed hold: %q", why)
	}
}

// No send without a check of the run's newest claim, and not on a check
// older than the hold's confirmation.
func TestNoSendWithoutACheckAfterTheConfirmation(t *testing.T) {
	h := held(5 * Second)
	h.Checked = false
	if why := maySend(h); !strings.Contains(why, "not checked") {
		t.Errorf("no check: %q", why)
	}
	h = held(5 * Second)
	h.CheckedAt = -Millisecond
	if why := maySend(h); !strings.Contains(why, "before the hold was confirmed") {
		t.Errorf("a check before the confirmation: %q", why)
	}
	h = held(5 * Second)
	h.Now = h.CheckedAt - 1
	if why := maySend(h); !strings.Contains(why, "before the check") {
		t.Errorf("a send before its check: %q", why)
	}
}

// The send must start within the ack wait less the margin of the
// confirmed ack's sending: at the window's end and after, it is refused,
// naming the window.
func TestNoSendPastTheFenceWindow(t *testing.T) {
	for _, c := range []struct {
		ackWait, now Nanos
		ok           bool
	}{
		{5 * Second, 4500*Millisecond - 1, true},
		{5 * Second, 4500 * Millisecond, false},
		{5 * Second, 6 * Second, false},
		{30 * Second, 27*Second - 1, true},
		{30 * Second, 27 * Second, false},
		{MinAckWait, MinFenceWindow - 1, true},
		{MinAckWait, MinFenceWindow, false},
	} {
		h := held(c.ackWait)
		h.Now = c.now
		why := maySend(h)
		if (why == "") != c.ok {
			t.Errorf("ack wait %s, %dns after the confirmation: %q, want allowed=%v", span(c.ackWait), c.now, why, c.ok)
		}
		if !c.ok && !strings.Contains(why, "must start within "+span(FenceWindow(c.ackWait))) {
			t.Errorf("ack wait %s: the refusal does not name the window: %q", span(c.ackWait), why)
		}
	}
}

// An ack wait below the minimum leaves no room for the check and the
// margin: nothing is sent under it.
func TestNoSendUnderAnAckWaitBelowTheMinimum(t *testing.T) {
	if why := maySend(held(MinAckWait - Millisecond)); !strings.Contains(why, "shorter than the 2s") {
		t.Fatalf("ack wait below the minimum: %q", why)
	}
	if FenceWindow(MinAckWait) != MinFenceWindow {
		t.Fatalf("the minimum ack wait leaves a window of %s, want %s", span(FenceWindow(MinAckWait)), span(MinFenceWindow))
	}
}

// The margin is a tenth of the ack wait, never less than its floor.
func TestTheMarginIsATenthOfTheAckWaitAtLeastItsFloor(t *testing.T) {
	for _, c := range []struct{ ackWait, margin Nanos }{
		{MinAckWait, MinFenceMargin},
		{5 * Second, MinFenceMargin},
		{30 * Second, 3 * Second},
	} {
		if got := FenceMargin(c.ackWait); got != c.margin {
			t.Errorf("ack wait %s: margin %s, want %s", span(c.ackWait), span(got), span(c.margin))
		}
	}
}

// A lookup that finds nothing proves the operation absent only once the
// settle window has passed since the last moment a request of it could
// still be on its way.
func TestNotFoundProvesNothingWithinTheSettleWindow(t *testing.T) {
	for _, c := range []struct{ sinceQuiet, settle, wait Nanos }{
		{-2 * Second, 5 * Second, 7 * Second}, // a send may still be in flight
		{0, 5 * Second, 5 * Second},
		{4 * Second, 5 * Second, Second},
		{5 * Second, 5 * Second, 0},
		{9 * Second, 5 * Second, 0},
		{0, 0, 0}, // no settle window: only the sends themselves
	} {
		if got := notFoundWait(c.sinceQuiet, c.settle); got != c.wait {
			t.Errorf("%s after quiet, settle %s: wait %s, want %s", span(c.sinceQuiet), span(c.settle), span(got), span(c.wait))
		}
	}
}
