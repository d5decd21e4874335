package cases

import (
	"slices"

	"github.com/factline/factline/events"
)

// DelegateTool is the built-in tool that starts a child run. No case lists
// it: a treatment offers it (Delegation), so that whether an agent may
// delegate is part of what a treatment compares.
const DelegateTool = "delegate"

// Delegation says whether a treatment lets the built-in agent delegate
// part of its task to child runs (the delegate tool, docs/tools.md). Absent
// or not allowed, the tool is never offered. It is part of the agent
// identity: the component "delegation" is "allowed" where it is.
type Delegation struct {
	// Allowed offers the delegate tool to the treatment's runs (never to
	// their children: a child cannot delegate again).
	Allowed bool `yaml:"allowed" json:"allowed"`
}

// DelegationAllowed says a case's runs under t are offered delegate: the
// treatment allows it and the case is not itself a child's.
func DelegationAllowed(c *Case, t *Treatment) bool {
	return t != nil && t.Delegation != nil && t.Delegation.Allowed && c.Parent == nil && t.Agent == nil
}

// ChildCase is the case of a child run: the parent's case with the
// delegate call's instruction, the tools granted (a subset of the
// parent's offered tools, never delegate), the budget carved out of the
// parent's and the workspace the parent had when it delegated. The child
// keeps the parent's permissions (its endpoints, extensions, environment
// and policies) and nothing more; it has no declared checks, requirements
// or grading of its own: it is no attempt of the suite, and it finishes
// done with an answer.
func ChildCase(parent *Case, instruction string, tools []string, budget Budget, fixture events.Digest, ref events.ParentRef) *Case {
	c := *parent
	c.Instruction = instruction
	c.Tools = slices.DeleteFunc(slices.Clone(tools), func(t string) bool { return t == DelegateTool })
	c.Budget = budget
	c.FixtureDigest = fixture
	c.Checks, c.Requirements, c.Grading = nil, nil, nil
	no := false
	c.RequiresWrite = &no
	c.Parent = &ref
	return &c
}
