package pages_test

import (
	"testing"

	"github.com/factline/factline/events"
)

// The viewer links parent and children: a parent's page lists the child
// runs its delegate calls started (with how each ended) and links the
// call to its child; a child's page names its parent run and call.
func TestARunPageLinksParentAndChildren(t *testing.T) {
	s := newScenario(t)
	const suite = "s"
	req := events.RunRequested{Case: "c", CaseDigest: digest, Treatment: "t", TreatmentDigest: digest, Trial: 1, Budget: events.Budget{Steps: 5}}
	s.add(suite, "p", 1, events.OwnerMeter, req)
	s.add(suite, "p", 1, events.OwnerRunner, events.RunClaimed{Runner: "r1", Lease: 1})
	s.add(suite, "p", 1, events.OwnerRunner, events.TurnStarted{Turn: 1, ContextDigest: digest, Messages: 2})
	s.add(suite, "p", 1, events.OwnerRunner, events.ModelReplied{Turn: 1, Provider: "scripted",
		Calls: []events.ToolCall{{ID: "ask", Name: "delegate", Args: `{"instruction":"look"}`, ArgsDigest: digest}}})
	s.add(suite, "p", 1, events.OwnerRunner, events.DispatchIntended{Turn: 1, CallID: "ask", Tool: "delegate", OperationID: "p/t1/ask",
		ArgsDigest: digest, Effect: events.EffectExternal, Delegation: &events.Delegation{Run: "p-d1-ask", Steps: 2}})
	s.add(suite, "p-d1-ask", 1, events.OwnerRunner, events.RunDelegated{Request: req, Parent: events.ParentRef{Run: "p", Turn: 1, CallID: "ask", OperationID: "p/t1/ask"}})
	s.add(suite, "p-d1-ask", 1, events.OwnerRunner, events.RunEnded{Status: events.RunDone, Reason: "done"})

	p, ok := s.m.Run(suite, "p")
	if !ok || len(p.Children) != 1 || p.Children[0].Run != "p-d1-ask" || p.Children[0].Status != "done" || p.Children[0].Turn != 1 {
		t.Fatalf("the parent's children: %+v", p.Children)
	}
	if len(p.Turns) != 1 || len(p.Turns[0].Calls) != 1 || p.Turns[0].Calls[0].Child != "p-d1-ask" {
		t.Fatalf("the delegate call's child: %+v", p.Turns)
	}
	c, ok := s.m.Run(suite, "p-d1-ask")
	if !ok || c.Parent == nil || c.Parent.Run != "p" || c.Parent.CallID != "ask" || c.Requested == nil || c.Requested.Case != "c" {
		t.Fatalf("the child's parent: %+v %+v", c.Parent, c.Requested)
	}
	if len(c.Children) != 0 {
		t.Fatalf("the child has children: %+v", c.Children)
	}
}
