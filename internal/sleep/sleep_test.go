package sleep_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/factline/factline/internal/sleep"
)

// A caller whose context has ended never sleeps: not for a long pause,
// not for none.
func TestAnEndedContextEndsTheSleep(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for _, d := range []time.Duration{0, -time.Second, time.Hour} {
		if err := sleep.For(ctx, d); !errors.Is(err, context.Canceled) {
			t.Errorf("For(cancelled, %v) = %v, want context.Canceled", d, err)
		}
	}
}

// A context that ends during the pause cuts it short with its error.
func TestACancelDuringTheSleepEndsIt(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- sleep.For(ctx, time.Hour) }()
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("For = %v, want context.Canceled", err)
	}
}

// A live context sleeps the pause out and returns nil; no pause returns
// at once.
func TestALiveContextSleepsThePause(t *testing.T) {
	for _, d := range []time.Duration{0, time.Millisecond} {
		if err := sleep.For(context.Background(), d); err != nil {
			t.Errorf("For(live, %v) = %v, want nil", d, err)
		}
	}
}
