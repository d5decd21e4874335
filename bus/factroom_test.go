package bus_test

import (
	"strings"
	"testing"

	"github.com/factline/factline/bus"
	"github.com/factline/factline/bus/bustest"
	"github.com/factline/factline/events"
)

// FactRoom is what a fact may take for an append to go through, headers
// and all: a fact of exactly that size is appended (with a long run name
// and message ID, and after another fact, so every header is set), and
// one of the server's whole max payload is refused.
func TestAFactOfTheRoomIsAppended(t *testing.T) {
	ctx := testCtx(t)
	b, _ := bustest.Start(t)
	run := "r" + strings.Repeat("x", 120)
	first, err := b.Append(ctx, bus.Expect{}, bus.Pending{Fact: bustest.Claim(t, "s", run, 1)})
	if err != nil {
		t.Fatal(err)
	}
	sized := func(n int) events.Fact {
		t.Helper()
		meta := events.Meta{Suite: "s", Run: run, TaskGeneration: 1, Position: 2, Causation: first[0].Fact.ID.String(),
			Producer: events.Producer{Service: events.OwnerRunner, Instance: "i"}}
		f, err := events.NewFact(meta, events.ModelReplied{Turn: 1, Provider: "p"})
		if err != nil {
			t.Fatal(err)
		}
		data, err := events.Encode(f)
		if err != nil {
			t.Fatal(err)
		}
		// The text's key and length prefix take a few bytes besides it.
		text := n - len(data)
		for range 8 {
			f, err = events.NewFact(meta, events.ModelReplied{Turn: 1, Provider: "p", Text: strings.Repeat("y", text)})
			if err != nil {
				t.Fatal(err)
			}
			if data, _ = events.Encode(f); len(data) == n {
				return f
			}
			text -= len(data) - n
		}
		t.Fatalf("made a fact of %d bytes, want %d", len(data), n)
		return events.Fact{}
	}
	id := strings.Repeat("m", 200)
	if _, err := b.Append(ctx, bus.ExpectLast(first[0].Seq), bus.Pending{Fact: sized(int(b.Conn().MaxPayload())), MsgID: id}); err == nil {
		t.Fatal("a fact of the whole max payload was appended: the test proves nothing")
	}
	if _, err := b.Append(ctx, bus.ExpectLast(first[0].Seq), bus.Pending{Fact: sized(b.FactRoom()), MsgID: id}); err != nil {
		t.Fatalf("a fact of FactRoom (%d bytes, max payload %d): %v", b.FactRoom(), b.Conn().MaxPayload(), err)
	}
}
