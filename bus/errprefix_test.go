package bus_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/factline/factline/bus"
	"github.com/factline/factline/bus/bustest"
	"github.com/factline/factline/internal/testutil"
)

var doubledPrefix = testutil.DoubledPrefix

func TestDoubledPrefixFindsOne(t *testing.T) {
	for msg, want := range map[string]string{
		"append: nats: nats: API error": "nats", "decode: decode: x": "decode", "a: b: c": "", "xnats: nats: y": "",
	} {
		if got := doubledPrefix(msg); got != want {
			t.Errorf("doubledPrefix(%q) = %q, want %q", msg, got, want)
		}
	}
}

// A server's refusal of an append reads once as the server's: nats.go
// wraps its API error, whose text starts "nats: ", in another "nats: ",
// and the bus hands it on without the second one, still matchable.
func TestAnAppendRefusalCarriesNoDoubledPrefix(t *testing.T) {
	ctx := testCtx(t)
	b, _ := bustest.Start(t)
	if _, err := b.Append(ctx, bus.Expect{}, bus.Pending{Fact: bustest.Claim(t, "s", "r1", 1)}); err != nil {
		t.Fatal(err)
	}
	_, err := b.Append(ctx, bus.ExpectLast(99), bus.Pending{Fact: bustest.Turn(t, "s", "r1", 2, 1)})
	if !errors.Is(err, bus.ErrConflict) {
		t.Fatalf("a stale expectation: %v, want a conflict", err)
	}
	if w := doubledPrefix(err.Error()); w != "" {
		t.Fatalf("the conflict repeats %q: %v", w, err)
	}
	if !strings.Contains(err.Error(), "wrong last sequence") {
		t.Fatalf("the conflict lost the server's words: %v", err)
	}
	a, err := b.AppendAsync(bus.ExpectLast(99), bus.Pending{Fact: bustest.Turn(t, "s", "r1", 2, 1)})
	if err != nil {
		t.Fatal(err)
	}
	_, err = a.Wait(ctx)
	if !errors.Is(err, bus.ErrConflict) || doubledPrefix(err.Error()) != "" {
		t.Fatalf("an async append's conflict: %v", err)
	}
}
