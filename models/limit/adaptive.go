package limit

import (
	"math"
	"time"
)

// The adaptive limit's rules, as numbers.
const (
	// CutFactor multiplies the limit on a throttle that starts a new
	// episode (multiplicative decrease).
	CutFactor = 0.5
	// MinPause is the least time every holder stops starting calls after
	// a cut, when the provider named no Retry-After.
	MinPause = time.Second
)

// State is the adaptive part of a limit, shared by the fleet. Its zero
// value is a limit at its configured maximum that is not paused.
type State struct {
	// Limit is the lowered concurrency, fractional so that additive
	// increase can add less than one per success; 0 means not lowered.
	Limit float64 `json:"limit,omitempty"`
	// PausedUntil is when calls may start again after a throttle.
	PausedUntil time.Time `json:"paused_until,omitzero"`
}

// Effective is how many calls may be in flight at once under a maximum
// of ceiling: the lowered limit rounded down, never below 1 nor above ceiling.
func (s State) Effective(ceiling int) int {
	if s.Limit <= 0 {
		return ceiling
	}
	return min(ceiling, int(math.Max(1, math.Floor(s.Limit))))
}

// Pause is how long from now no call may start.
func (s State) Pause(now time.Time) time.Duration {
	return max(0, s.PausedUntil.Sub(now))
}

// Throttled is s after a provider throttled a call at now, asking to wait
// retryAfter (0: it named no wait). The first throttle of an episode
// halves the limit and pauses every holder for the wait (at least
// MinPause); throttles that come while that pause lasts are the same
// episode (calls sent before the cut) and only extend the pause, so one
// burst of 429s cuts the limit once, not once per call in flight.
func Throttled(s State, ceiling int, now time.Time, retryAfter time.Duration) State {
	until := now.Add(retryAfter)
	if now.Before(s.PausedUntil) {
		if until.After(s.PausedUntil) {
			s.PausedUntil = until
		}
		return s
	}
	s.Limit = math.Max(1, float64(s.Effective(ceiling))*CutFactor)
	s.PausedUntil = now.Add(max(retryAfter, MinPause))
	return s
}

// Succeeded is s after a call succeeded: a lowered limit grows by one over
// its current size (additive increase: about one more slot per limit's
// worth of successes), and a limit back at its ceiling is no longer lowered.
func Succeeded(s State, ceiling int) State {
	if s.Limit <= 0 {
		return s
	}
	s.Limit += 1 / math.Max(1, math.Floor(s.Limit))
	if s.Limit >= float64(ceiling) {
		s.Limit = 0
	}
	return s
}
