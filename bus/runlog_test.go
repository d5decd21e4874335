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
