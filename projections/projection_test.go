package projections_test

import (
	"strings"
	"testing"

	"github.com/factline/factline/events"
	"github.com/factline/factline/projections"
)

func TestRegistry(t *testing.T) {
	if _, err := projections.Lookup("runs"); err != nil {
		t.Fatal(err)
	}
	_, err := projections.Lookup("nope")
	if err == nil || !strings.Contains(err.Error(), "runs") {
		t.Fatalf("lookup of an unknown name: %v (should list the known ones)", err)
	}
	mustPanic(t, "duplicate", func() { projections.Register(projections.RunsFold) })
	mustPanic(t, "bad name", func() {
		projections.Register(projections.Fold[int]{Key: "bad name", Init: func() int { return 0 }})
	})
}

func mustPanic(t *testing.T, what string, fn func()) {
	t.Helper()
	defer func() {
		if recover() == nil {
			t.Errorf("%s: no panic", what)
		}
	}()
	fn()
}

func fact(t *testing.T, run string, pos uint64, owner events.Owner, body events.Body) events.Fact {
	t.Helper()
	gen := uint32(1)
	if body.Kind().SuiteScoped() {
		run, gen = events.SuiteScope, 0
	}
	f, err := events.NewFact(events.Meta{Suite: "s", Run: run, TaskGeneration: gen, Position: pos,
		Producer: events.Producer{Service: owner, Instance: "t"}}, body)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// The runs fold is the handoff packet: status, reason, spend (unknown stays
// unknown), last evidence and next action, and it ignores suite facts.
func TestRunsFold(t *testing.T) {
	d := events.DigestOf([]byte("x"))
	in := projections.RunsFold.Start()
	for _, f := range []events.Fact{
		fact(t, "", 1, events.OwnerSubmitter, events.SuiteSubmitted{Name: "s", SpecDigest: d, Cases: []events.Ref{{ID: "c", Digest: d}}, Treatments: []events.Ref{{ID: "t", Digest: d}}, Trials: 1}),
		fact(t, "r1", 1, events.OwnerMeter, events.RunRequested{Case: "c", CaseDigest: d, Treatment: "t", TreatmentDigest: d, Trial: 2}),
		fact(t, "r1", 2, events.OwnerRunner, events.RunClaimed{Runner: "runner-7", Lease: 1}),
		fact(t, "r1", 3, events.OwnerRunner, events.RunEnded{Status: events.RunBlocked, Reason: "needs a token", Steps: 3,
			Spent: events.Spent{Steps: 3}, LastEvidence: []events.EvidenceRef{"e1"}, NextAction: "grant the token"}),
	} {
		in.Apply(f)
	}
	runs, ok := projections.RunsFold.State(in)
	if !ok || len(runs) != 1 {
		t.Fatalf("state %v", runs)
	}
	r := runs["s/r1"]
	if r.Case != "c" || r.Trial != 2 || r.Runner != "runner-7" || r.Status != events.RunBlocked ||
		r.NextAction != "grant the token" || r.Facts != 3 || len(r.Evidence) != 1 {
		t.Fatalf("summary %+v", r)
	}
	if r.Spent == nil || r.Spent.Tokens != nil || r.Spent.Cost != nil {
		t.Fatalf("unknown usage must stay unknown: %+v", r.Spent)
	}
	if _, ok := projections.KindsFold.State(in); ok {
		t.Fatal("State accepted an instance of another fold")
	}
}
