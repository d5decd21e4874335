package main

import (
	"testing"

	"github.com/factline/factline/events"
)

func TestTokensPerTurn(t *testing.T) {
	in := Tokens.Start()
	for i, u := range []*events.Usage{{InputTokens: 10, OutputTokens: 2}, nil} {
		f, err := events.NewFact(events.Meta{Suite: "s", Run: "r", TaskGeneration: 1, Position: uint64(i + 1),
			Producer: events.Producer{Service: events.OwnerRunner, Instance: "t"}},
			events.ModelReplied{Turn: uint32(i + 1), Provider: "scripted", Usage: u})
		if err != nil {
			t.Fatal(err)
		}
		in.Apply(f)
	}
	got, _ := Tokens.State(in)
	turns := got["s/r"]
	if len(turns) != 2 || turns[0].Input != 10 || !turns[0].Known || turns[1].Known {
		t.Fatalf("tokens per turn: %+v", turns)
	}
}
