package limit_test

import (
	"testing"
	"time"

	"github.com/factline/factline/models/limit"
)

var t0 = time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)

func TestAnUnloweredLimitIsItsCeiling(t *testing.T) {
	if got := (limit.State{}).Effective(8); got != 8 {
		t.Fatalf("effective %d, want 8", got)
	}
}

func TestAThrottleWithRetryAfterHalvesTheLimit(t *testing.T) {
	s := limit.Throttled(limit.State{}, 8, t0, 3*time.Second)
	if got := s.Effective(8); got != 4 {
		t.Fatalf("effective %d after a 429, want 4", got)
	}
}

func TestAThrottlePausesEveryCallerForItsRetryAfter(t *testing.T) {
	s := limit.Throttled(limit.State{}, 8, t0, 3*time.Second)
	if got := s.Pause(t0); got != 3*time.Second {
		t.Fatalf("pause %s, want the 3s Retry-After", got)
	}
	if got := s.Pause(t0.Add(3 * time.Second)); got != 0 {
		t.Fatalf("pause %s once the Retry-After passed, want none", got)
	}
}

func TestAThrottleWithoutRetryAfterPausesTheMinimum(t *testing.T) {
	s := limit.Throttled(limit.State{}, 8, t0, 0)
	if got := s.Pause(t0); got != limit.MinPause {
		t.Fatalf("pause %s, want %s", got, limit.MinPause)
	}
}

func TestThrottlesDuringThePauseCutOnce(t *testing.T) {
	s := limit.Throttled(limit.State{}, 8, t0, 2*time.Second)
	s = limit.Throttled(s, 8, t0.Add(time.Second), 5*time.Second)
	if got := s.Effective(8); got != 4 {
		t.Fatalf("effective %d after one burst of throttles, want 4 (one cut)", got)
	}
	if got := s.Pause(t0.Add(time.Second)); got != 5*time.Second {
		t.Fatalf("pause %s, want the later throttle's 5s", got)
	}
}

func TestAThrottleAfterThePauseCutsAgain(t *testing.T) {
	s := limit.Throttled(limit.State{}, 8, t0, time.Second)
	s = limit.Throttled(s, 8, t0.Add(2*time.Second), time.Second)
	if got := s.Effective(8); got != 2 {
		t.Fatalf("effective %d after two episodes, want 2", got)
	}
}

func TestTheLimitNeverFallsBelowOne(t *testing.T) {
	s := limit.State{}
	at := t0
	for range 10 {
		s = limit.Throttled(s, 4, at, time.Second)
		at = at.Add(2 * time.Second)
	}
	if got := s.Effective(4); got != 1 {
		t.Fatalf("effective %d, want 1", got)
	}
}

func TestSuccessesRaiseALoweredLimitByOnePerLimitsWorth(t *testing.T) {
	s := limit.Throttled(limit.State{}, 8, t0, 0) // 4
	for range 3 {
		s = limit.Succeeded(s, 8)
	}
	if got := s.Effective(8); got != 4 {
		t.Fatalf("effective %d after 3 successes at 4, want still 4 (additive: slow)", got)
	}
	s = limit.Succeeded(s, 8)
	if got := s.Effective(8); got != 5 {
		t.Fatalf("effective %d after 4 successes at 4, want 5", got)
	}
}

func TestSuccessesRestoreTheCeilingAndNoMore(t *testing.T) {
	s := limit.Throttled(limit.State{}, 4, t0, 0) // 2
	for range 100 {
		s = limit.Succeeded(s, 4)
	}
	if s != (limit.State{Limit: 0, PausedUntil: s.PausedUntil}) || s.Effective(4) != 4 {
		t.Fatalf("state %+v after many successes, want the ceiling (not lowered)", s)
	}
}

func TestASuccessAtTheCeilingChangesNothing(t *testing.T) {
	if s := limit.Succeeded(limit.State{}, 4); s != (limit.State{}) {
		t.Fatalf("state %+v, want unchanged", s)
	}
}

func TestALoweredLimitIsNeverAboveTheCeiling(t *testing.T) {
	if got := (limit.State{Limit: 9.5}).Effective(4); got != 4 {
		t.Fatalf("effective %d, want the ceiling 4", got)
	}
}

func TestKeysDifferByEndpointAndModelAndAreStoreTokens(t *testing.T) {
	a := limit.Key("openai", "http://127.0.0.1:1/v1", "m")
	for _, other := range []string{limit.Key("openai", "http://127.0.0.1:2/v1", "m"), limit.Key("openai", "http://127.0.0.1:1/v1", "n")} {
		if a == other {
			t.Fatalf("two limits share key %s", a)
		}
	}
	if a != limit.Key("openai", "http://127.0.0.1:1/v1", "m") {
		t.Fatal("the key is not stable")
	}
	for _, r := range a {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9') {
			t.Fatalf("key %q has %q, not a store token", a, r)
		}
	}
}
