// Package httpmodel holds what the HTTP model providers built on an
// official SDK (anthropic, responses) share: the retry loop with
// Retry-After, the mapping of an HTTP exchange onto a typed model error,
// key redaction and the cost arithmetic. It does no I/O of its own: each
// provider makes its SDK call and hands the outcome here.
package httpmodel

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/factline/factline/models"
)

// StatusOverloaded is Anthropic's "overloaded" status: the provider is
// throttling like 503, under its own number.
const StatusOverloaded = 529

// Failure is one failed attempt.
type Failure struct {
	Err   *models.Error
	Retry bool
	// CtxErr is set when the caller's ctx ended: Do maps it.
	CtxErr error
}

// Retry is a provider's retry policy and its seams.
type Retry struct {
	Provider   string
	MaxRetries int           // retries after the first attempt; 0: none
	MaxBackoff time.Duration // caps one wait; a longer Retry-After ends the retries
	// Sleep waits between attempts (sleep.For outside tests).
	Sleep func(ctx context.Context, d time.Duration) error
	// Jitter is a value in [0, 1).
	Jitter func() float64
}

// Throttling reports whether an HTTP status asks the caller to slow down:
// 429 (rate limited), 503 (unavailable) and 529 (Anthropic's overloaded).
func Throttling(status int) bool {
	return status == http.StatusTooManyRequests || status == http.StatusServiceUnavailable || status == StatusOverloaded
}

// Do calls attempt until it succeeds, fails for good or the retries run
// out. It retries what attempt marks retryable, waiting an exponential
// backoff with jitter or what the provider asked (a longer ask than
// MaxBackoff ends the retries at once), and reports every throttled
// attempt to the hook ctx carries (models.WithThrottleHook), the retried
// ones too: a limiter shared by the fleet must slow down while a call
// still retries. Every error is a *models.Error with the attempts made,
// except a cancellation of ctx, which wraps context.Canceled (a passed
// ctx deadline is ErrTimeout).
func (r Retry) Do(ctx context.Context, attempt func(ctx context.Context) (models.Reply, *Failure)) (models.Reply, error) {
	for n := 1; ; n++ {
		reply, f := attempt(ctx)
		if f == nil {
			return reply, nil
		}
		if f.CtxErr != nil {
			return models.Reply{}, r.contextError(n, f.CtxErr)
		}
		f.Err.Attempts = n
		if Throttling(f.Err.Status) {
			models.ReportThrottle(ctx, models.Throttle{Status: f.Err.Status, RetryAfter: f.Err.RetryAfter})
		}
		if !f.Retry || n > r.MaxRetries {
			return models.Reply{}, f.Err
		}
		if f.Err.RetryAfter > r.MaxBackoff {
			f.Err.Err = &Cause{Msg: fmt.Sprintf("%s; the provider asks to wait %s, more than the %s cap",
				f.Err.Err, f.Err.RetryAfter, r.MaxBackoff), Orig: f.Err.Err}
			return models.Reply{}, f.Err
		}
		if err := r.Sleep(ctx, Backoff(n, f.Err.RetryAfter, r.MaxBackoff, r.Jitter)); err != nil {
			return models.Reply{}, r.contextError(n, err)
		}
	}
}

// contextError maps the end of the caller's ctx after n attempts.
func (r Retry) contextError(n int, err error) error {
	if errors.Is(err, context.DeadlineExceeded) {
		return &models.Error{Kind: models.ErrTimeout, Provider: r.Provider, Attempts: n,
			Err: fmt.Errorf("the caller's deadline passed: %w", err)}
	}
	return fmt.Errorf("%s: call canceled after %d attempts: %w", r.Provider, n, err)
}

// Backoff is the wait after failed attempt n (1-based): what the provider
// asked for plus up to 10% (at most 1s) of jitter, or an exponential
// backoff from 500ms with equal jitter; never more than maxWait and never
// less than retryAfter.
func Backoff(n int, retryAfter, maxWait time.Duration, jitter func() float64) time.Duration {
	if retryAfter > 0 {
		j := min(retryAfter/10, time.Second)
		return max(retryAfter, min(retryAfter+time.Duration(jitter()*float64(j)), maxWait))
	}
	d := maxWait
	if n < 30 {
		d = min(500*time.Millisecond<<(n-1), maxWait)
	}
	return d/2 + time.Duration(jitter()*float64(d/2))
}

// RetryAfter reads Retry-After-Ms (milliseconds) or Retry-After (seconds
// or an HTTP date, against now); 0 when absent or unusable.
func RetryAfter(h http.Header, now time.Time) time.Duration {
	if v := strings.TrimSpace(h.Get("Retry-After-Ms")); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil && ms > 0 && !math.IsInf(ms, 0) {
			return durationOf(ms, time.Millisecond)
		}
	}
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil {
		if s > 0 && !math.IsInf(s, 0) {
			return durationOf(s, time.Second)
		}
		return 0
	}
	if t, err := http.ParseTime(v); err == nil {
		if d := t.Sub(now); d > 0 {
			return d
		}
	}
	return 0
}

// durationOf converts v units to a Duration, saturating.
func durationOf(v float64, unit time.Duration) time.Duration {
	f := v * float64(unit)
	if f >= math.MaxInt64 {
		return math.MaxInt64
	}
	return time.Duration(math.Ceil(f))
}

// Cause is an error text (already redacted) that still answers errors.Is
// for the error it came from, without exposing that error: its text could
// hold what redaction removed.
type Cause struct {
	Msg  string
	Orig error
}

// Error returns the redacted text.
func (c *Cause) Error() string { return c.Msg }

// Is reports whether the original error matches target (e.g.
// context.DeadlineExceeded).
func (c *Cause) Is(target error) bool { return errors.Is(c.Orig, target) }
