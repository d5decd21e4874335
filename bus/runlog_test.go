package bus_test

import (
	"testing"

	"github.com/factline/factline/bus"
	"github.com/factline/factline/events"
)

// A run's log names its request, wherever in the log it stands; a log
// without one says so rather than handing out a zero request.
func TestARunLogFindsItsRequest(t *testing.T) {
	req := events.RunRequested{Case: "fix-sum", Treatment: "baseline", Trial: 2}
	log := bus.RunLog{Records: []bus.Record{
		{Seq: 3, Fact: events.Fact{Body: events.RunClaimed{Runner: "r", Lease: 1}}},
		{Seq: 4, Fact: events.Fact{Body: req}},
	}}
	got, ok := log.Requested()
	if !ok || got.Case != "fix-sum" || got.Trial != 2 {
		t.Fatalf("Requested() = %+v, %v; want the run.requested at sequence 4", got, ok)
	}
	if _, ok := (bus.RunLog{Records: log.Records[:1]}).Requested(); ok {
		t.Fatal("a log without a run.requested found one")
	}
}

// A child run's request is the one its run.delegated carries: the stall
// handler and the stop decider read its case the same way as any run's.
func TestAChildRunLogFindsTheRequestItsDelegationCarries(t *testing.T) {
	req := events.RunRequested{Case: "fix-sum", Treatment: "baseline", Trial: 1}
	log := bus.RunLog{Records: []bus.Record{
		{Seq: 1, Fact: events.Fact{Body: events.RunDelegated{Request: req, Parent: events.ParentRef{Run: "p", Turn: 1, CallID: "c", OperationID: "p/t1/c"}}}},
	}}
	if got, ok := log.Requested(); !ok || got.Case != "fix-sum" {
		t.Fatalf("Requested() = %+v, %v; want the delegated request", got, ok)
	}
}
