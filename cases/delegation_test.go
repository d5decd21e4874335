package cases

import (
	"errors"
	"slices"
	"testing"

	"github.com/factline/factline/events"
)

func delegationCase(t *testing.T, tools string) *Case {
	t.Helper()
	c, err := ParseCase("c.yaml", []byte("id: c\ninstruction: do it\n"+tools))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func delegationTreatment(t *testing.T, extra string) *Treatment {
	t.Helper()
	tr, err := ParseTreatment("t.yaml", []byte("id: t\nmodel: {provider: scripted, scripts: x}\n"+extra))
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

// The delegate tool is offered only where the treatment allows
// delegation, never by default, and never to a child run's case.
func TestDelegateIsOfferedOnlyWhereTheTreatmentAllowsIt(t *testing.T) {
	c := delegationCase(t, "")
	if slices.Contains(OfferedTools(c, delegationTreatment(t, "")), DelegateTool) {
		t.Fatal("offered without a delegation section")
	}
	if slices.Contains(OfferedTools(c, delegationTreatment(t, "delegation: {allowed: false}\n")), DelegateTool) {
		t.Fatal("offered where delegation is not allowed")
	}
	allowed := delegationTreatment(t, "delegation: {allowed: true}\n")
	if got := OfferedTools(c, allowed); got[len(got)-1] != DelegateTool {
		t.Fatalf("not offered where allowed: %v", got)
	}
	child := ChildCase(c, "look it up", OfferedTools(c, allowed), Budget{Steps: 3}, "", events.ParentRef{Run: "p", Turn: 1, CallID: "c1", OperationID: "p/t1/c1"})
	if got := OfferedTools(child, allowed); slices.Contains(got, DelegateTool) {
		t.Fatalf("a child is offered delegate: %v", got)
	}
}

// A case never lists delegate: whether an agent may delegate is the
// treatment's, so that it is what two treatments can differ in.
func TestACaseCannotListDelegate(t *testing.T) {
	_, err := ParseCase("c.yaml", []byte("id: c\ninstruction: do it\ntools: [read_file, delegate]\n"))
	var ce *Error
	if !errors.As(err, &ce) || ce.Field != "tools[1]" {
		t.Fatalf("a case listing delegate: %v", err)
	}
}

// An external agent calls its own tools: a treatment running one cannot
// offer delegation.
func TestAnAgentTreatmentCannotAllowDelegation(t *testing.T) {
	_, err := ParseTreatment("t.yaml", []byte("id: t\nmodel: {provider: scripted, scripts: x}\nagent: {command: [x]}\ndelegation: {allowed: true}\n"))
	var ce *Error
	if !errors.As(err, &ce) || ce.Field != "delegation" {
		t.Fatalf("an agent treatment allowing delegation: %v", err)
	}
}

// A child's case keeps the parent's permissions and takes the call's
// instruction, tools and budget; it has no checks, requirements or
// grading, and names its parent.
func TestAChildCaseIsTheParentsNarrowed(t *testing.T) {
	c := delegationCase(t, "budget: {steps: 9, cost: 50}\nchecks: [{id: tests, command: ./check.sh}]\nenv: {A: b}\n")
	ref := events.ParentRef{Run: "p", Turn: 2, CallID: "c1", OperationID: "p/t2/c1"}
	child := ChildCase(c, "look it up", []string{"read_file", DelegateTool}, Budget{Steps: 3, Cost: 10}, "sha256:x", ref)
	if child.Instruction != "look it up" || !slices.Equal(child.Tools, []string{"read_file"}) || child.Budget.Steps != 3 || child.Budget.Cost != 10 {
		t.Fatalf("child: %+v", child)
	}
	if len(child.Checks) != 0 || len(child.Requirements) != 0 || child.RequiresWrite == nil || *child.RequiresWrite || child.Parent == nil || *child.Parent != ref {
		t.Fatalf("child's task: %+v", child)
	}
	if child.Env["A"] != "b" || c.Instruction != "do it" || len(c.Checks) != 1 {
		t.Fatalf("the parent's permissions kept, the parent untouched: %+v / %+v", child, c)
	}
}
