package httpmodel

import (
	"math"
	"net/http"
	"testing"
	"time"

	"github.com/factline/factline/models"
)

func u64(v uint64) *uint64 { return &v }

// A call is priced per kind of input: plain at the input price, cache
// reads at their price (the input price when unknown), cache writes at
// theirs; a write without a known price makes the cost unknown.
func TestPricesPriceEachKindOfInput(t *testing.T) {
	p := Prices{Input: 10, Output: 20, CacheRead: 1, CacheWrite: 15}
	u := models.Usage{InputTokens: 1_000_000, OutputTokens: 100_000, CachedInputTokens: u64(400_000), CacheWriteInputTokens: u64(100_000)}
	// 500k×10 + 400k×1 + 100k×15 + 100k×20 = 5M + 0.4M + 1.5M + 2M = 8.9M per million
	if c := p.Of(u); c == nil || *c != 9 {
		t.Fatalf("cost %v, want 9 (8.9 rounded up)", c)
	}
	if c := (Prices{Input: 10, Output: 20}).Of(u); c != nil {
		t.Fatalf("cost %d with an unknown cache write price, want unknown", *c)
	}
	noWrite := u
	noWrite.CacheWriteInputTokens = u64(0)
	// 600k×10 + 400k×10 + 100k×20 = 12M per million
	if c := (Prices{Input: 10, Output: 20}).Of(noWrite); c == nil || *c != 12 {
		t.Fatalf("cost %v, want 12: reads at the input price", c)
	}
	if c := (Prices{Input: 10}).Of(u); c != nil {
		t.Fatal("a cost without an output price")
	}
}

// Parts larger than the whole (a provider's inconsistency) never price
// below zero or wrap around.
func TestPricesNeverWrapOnInconsistentUsage(t *testing.T) {
	p := Prices{Input: 10, Output: 20, CacheRead: 1, CacheWrite: 15}
	u := models.Usage{InputTokens: 100_000, CachedInputTokens: u64(math.MaxUint64), CacheWriteInputTokens: u64(5)}
	// every input token a cache read (100k×1), no plain input, no write left
	if c := p.Of(u); c == nil || *c != 1 {
		t.Fatalf("cost %v, want 1", c)
	}
	if c := Cost(Priced{math.MaxUint64, math.MaxUint64}); c != math.MaxUint64 {
		t.Fatalf("cost %d, want saturation", c)
	}
}

func TestReservePricesTheInputAtTheDearestPrice(t *testing.T) {
	if r := (Prices{Input: 3, Output: 15, CacheWrite: 4}).Reserve(1_000_000, 1_000_000); r != 19 {
		t.Fatalf("reserve %d, want 4+15", r)
	}
	if r := (Prices{Output: 15}).Reserve(1, 1); r != 0 {
		t.Fatalf("reserve %d unpriced, want 0", r)
	}
}

func TestRetryAfterReadsMillisecondsSecondsAndDates(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		h    http.Header
		want time.Duration
	}{
		{http.Header{"Retry-After-Ms": {"250"}, "Retry-After": {"9"}}, 250 * time.Millisecond},
		{http.Header{"Retry-After": {"3"}}, 3 * time.Second},
		{http.Header{"Retry-After": {"0.01"}}, 10 * time.Millisecond},
		{http.Header{"Retry-After": {now.Add(7 * time.Second).Format(http.TimeFormat)}}, 7 * time.Second},
		{http.Header{"Retry-After": {"soon"}}, 0},
		{http.Header{"Retry-After": {"-4"}}, 0},
		{http.Header{}, 0},
	} {
		if got := RetryAfter(tc.h, now); got != tc.want {
			t.Errorf("RetryAfter(%v) = %s, want %s", tc.h, got, tc.want)
		}
	}
}

func TestBackoffHonoursRetryAfterAndTheCap(t *testing.T) {
	half := func() float64 { return 0.5 }
	if d := Backoff(1, 3*time.Second, 30*time.Second, half); d < 3*time.Second || d > 3300*time.Millisecond {
		t.Fatalf("backoff %s for a 3s Retry-After", d)
	}
	if d := Backoff(1, 0, 30*time.Second, half); d != 375*time.Millisecond {
		t.Fatalf("first backoff %s, want 375ms (equal jitter of 500ms)", d)
	}
	if d := Backoff(40, 0, 2*time.Second, half); d > 2*time.Second {
		t.Fatalf("backoff %s over the cap", d)
	}
}
