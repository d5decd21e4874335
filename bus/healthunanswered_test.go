package bus_test

import (
	"strings"
	"testing"

	"github.com/factline/factline/bus"
	"github.com/factline/factline/bus/bustest"
)

// /healthz answers with Health. A connection that stays up while nothing
// comes back (a link that died without a reset, which the client notices
// only after its pings go unanswered, minutes later; a server whose disk
// filled, which answers reads and stores nothing) held every write of a
// service for its 10 s bound, again and again, while Health said nothing
// was wrong. A write that went unanswered makes it unhealthy until a
// write is acknowledged again.
func TestHealthSaysWhenWritesGoUnanswered(t *testing.T) {
	t.Parallel()
	b, fz, ctx := behindFreezer(t)
	if _, err := b.Append(ctx, bus.Expect{}, bus.Pending{Fact: bustest.Claim(t, "s", "r1", 1)}); err != nil {
		t.Fatal(err)
	}
	if err := b.Health(); err != nil {
		t.Fatalf("healthy bus: %v", err)
	}
	fz.freeze()
	if _, err := b.Append(ctx, bus.Expect{}, bus.Pending{Fact: bustest.Claim(t, "s", "r2", 1)}); err == nil {
		t.Fatal("an append whose answer was lost succeeded")
	}
	if !b.Conn().IsConnected() {
		t.Fatal("the client noticed the lost answers: the test shows nothing")
	}
	err := b.Health()
	if err == nil || !strings.Contains(err.Error(), "unanswered") {
		t.Fatalf("health while writes go unanswered: %v", err)
	}
	fz.p.Heal()
	if _, err := b.Append(ctx, bus.Expect{}, bus.Pending{Fact: bustest.Claim(t, "s", "r3", 1)}); err != nil {
		t.Fatal(err)
	}
	if err := b.Health(); err != nil {
		t.Fatalf("health once a write was acknowledged again: %v", err)
	}
}
