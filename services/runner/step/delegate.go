package step

import (
	"fmt"
	"slices"
	"strings"

	"github.com/factline/factline/events"
)

// A delegate call hands part of a run's task to a child run. What the
// child may do and spend is decided here, from the parent's facts and
// offered tools (Delegate); the runner carries it out: it commits the
// intent with the grant, starts the child on the bus, waits for its end
// and settles the call with the child's outcome (ChildOutcomeOf).

// DelegateAsk is what a delegate call asks for its child: the tools it
// names (nil: the parent's) and the limits it names (zero: the default
// share).
type DelegateAsk struct {
	Tools        []string
	Steps        uint32
	InputTokens  uint64
	OutputTokens uint64
	Cost         uint64
	WallMillis   uint64
}

// DelegateParent is what the parent has to give: the tools it is
// offered, its budget, what its facts say it spent and reserved, and its
// wall time left (0: no wall limit).
type DelegateParent struct {
	Offered    []string
	Budget     Budget
	Spend      Spend
	WallMillis uint64
	// WallLeft is the parent's wall time left, when WallMillis > 0.
	WallLeft uint64
}

// DelegateTool is the name of the delegate tool (cases.DelegateTool,
// which this core cannot import).
const DelegateTool = "delegate"

// DenyReason is why a delegation is refused before any child starts.
type DenyReason int

// The reasons a delegation is refused.
const (
	// DenyTool: the call asks for a tool the parent is not offered (or
	// for delegate itself: a child never delegates again).
	DenyTool DenyReason = iota + 1
	// DenyBudget: the call asks for more of a limit than the parent has
	// left, or the parent has none of it left to share.
	DenyBudget
	// DenyNoTool: the child would be offered no tool (none asked, or
	// none of the parent's but delegate). A case's tools are stored
	// without an empty list, and a case without one is offered every
	// built-in tool: a child with none would get more than its parent.
	DenyNoTool
)

// DelegationDenied is a refused delegation: the typed reason and what it
// names (the tool, or the limit with what was asked and what is left).
type DelegationDenied struct {
	Reason DenyReason
	Tool   string
	Limit  string
	Asked  uint64
	Left   uint64
}

// Error says what was refused and why, as the model reads it.
func (d *DelegationDenied) Error() string {
	switch d.Reason {
	case DenyTool:
		if d.Tool == DelegateTool {
			return "a child cannot be given delegate: children do not delegate again"
		}
		return fmt.Sprintf("tool %q is not offered to this run: a child gets this run's permissions or fewer, never more", d.Tool)
	case DenyNoTool:
		return "a child must be offered at least one of this run's tools other than delegate"
	case DenyBudget:
		if d.Asked == 0 {
			return fmt.Sprintf("no %s left to give a child (%d left)", d.Limit, d.Left)
		}
		return fmt.Sprintf("the child asks for %d %s, this run has %d left", d.Asked, d.Limit, d.Left)
	}
	return fmt.Sprintf("delegation refused (reason %d)", int(d.Reason))
}

// Delegate decides what a delegate call's child gets, or why it gets
// nothing:
//
//   - Tools: the ones asked, each of which the parent must be offered
//     (delegate never); none asked, the parent's without delegate.
//   - Each limit the parent has (steps, input and output tokens, cost):
//     what the call asks if the parent has that much left, else refused;
//     nothing asked, half of what is left (at least one step); nothing
//     left, refused. A limit the parent does not have is the call's ask
//     (0: none). Left is the limit less what was spent and what running
//     children hold reserved.
//   - Wall time: the ask or the parent's time left, whichever is less.
//
// run is the child's run ID (ChildRun).
func Delegate(ask DelegateAsk, parent DelegateParent, run string) (events.Delegation, []string, *DelegationDenied) {
	tools, denied := ChildTools(ask.Tools, parent.Offered)
	if denied != nil {
		return events.Delegation{}, nil, denied
	}
	s, b := parent.Spend, parent.Budget
	d := events.Delegation{Run: run}
	carve := func(name string, limit, used, asked uint64) uint64 {
		if denied != nil {
			return 0
		}
		if limit == 0 {
			return asked
		}
		left := uint64(0)
		if used < limit {
			left = limit - used
		}
		switch {
		case asked > left:
			denied = &DelegationDenied{Reason: DenyBudget, Limit: name, Asked: asked, Left: left}
		case asked > 0:
			return asked
		case left/2 == 0 && name != "steps", left == 0:
			denied = &DelegationDenied{Reason: DenyBudget, Limit: name, Left: left}
		case name == "steps":
			return max(left/2, 1)
		}
		return left / 2
	}
	d.Steps = uint32(carve("steps", uint64(b.Steps), uint64(s.Steps+s.Reserved.Steps), uint64(ask.Steps)))
	d.InputTokens = carve("input tokens", b.InputTokens, s.InputTokens+s.Reserved.InputTokens, ask.InputTokens)
	d.OutputTokens = carve("output tokens", b.OutputTokens, s.OutputTokens+s.Reserved.OutputTokens, ask.OutputTokens)
	d.Cost = carve("cost units", b.Cost, s.Charged+s.Reserved.Cost, ask.Cost)
	if denied != nil {
		return events.Delegation{}, nil, denied
	}
	if d.Steps == 0 {
		// A parent without a step limit (none has one today: a case
		// defaults to 20) still bounds its child.
		d.Steps = 1
	}
	d.WallMillis = ask.WallMillis
	if parent.WallMillis > 0 && (d.WallMillis == 0 || d.WallMillis > parent.WallLeft) {
		d.WallMillis = max(parent.WallLeft, 1)
	}
	return d, tools, nil
}

// ChildTools are the tools a child is offered: those asked, each of which
// the parent must be offered (delegate never), or, none asked, the
// parent's without delegate; never none (DenyNoTool).
func ChildTools(asked, offered []string) ([]string, *DelegationDenied) {
	if asked == nil {
		asked = slices.DeleteFunc(slices.Clone(offered), func(t string) bool { return t == DelegateTool })
	}
	if len(asked) == 0 {
		return nil, &DelegationDenied{Reason: DenyNoTool}
	}
	for _, t := range asked {
		if t == DelegateTool || !slices.Contains(offered, t) {
			return nil, &DelegationDenied{Reason: DenyTool, Tool: t}
		}
	}
	return slices.Clone(asked), nil
}

// ChildRun is the run ID of the child a delegate call starts: made from
// the call's operation (the parent run, the turn and the call ID), so
// that a parent taken over finds the child it started. Characters a
// subject token cannot hold become '_'; an ID that would be too long is
// cut and ends in a digest of the whole, so two calls never share one.
func ChildRun(parent string, turn uint32, call events.CallID) string {
	id := fmt.Sprintf("%s-d%d-%s", parent, turn, call)
	clean := strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' {
			return r
		}
		return '_'
	}, id)
	if clean == id && len(id) <= 128 {
		return id
	}
	// Cleaning may make two IDs one: the digest of the original keeps
	// them apart.
	sum := events.DigestOf([]byte(id)).Hex()[:16]
	if len(clean) > 128-17 {
		clean = clean[:128-17]
	}
	return clean + "-" + sum
}

// ChildOutcomeOf is how a child run ended, from its facts: its run.ended
// status and reason, its answer (the text of its last reply that had
// any, cut to maxAnswer bytes) and what it spent (Tally). ok is false
// while the child has not ended.
func ChildOutcomeOf(run string, facts []events.Fact) (events.ChildOutcome, bool) {
	out := events.ChildOutcome{Run: run}
	ended := false
	for _, f := range facts {
		switch b := f.Body.(type) {
		case events.ModelReplied:
			if strings.TrimSpace(b.Text) != "" {
				out.Answer = b.Text
			}
		case events.RunEnded:
			if !ended {
				out.Status, out.Reason, ended = b.Status, b.Reason, true
			}
		}
	}
	if !ended {
		return events.ChildOutcome{}, false
	}
	if len(out.Answer) > maxAnswer {
		out.Answer = out.Answer[:maxAnswer] + "…"
	}
	s := Tally(facts)
	out.Steps, out.Charged = s.Steps, s.Charged
	if s.TokensKnown {
		out.Usage = &events.Usage{InputTokens: s.InputTokens, OutputTokens: s.OutputTokens}
		if s.CostKnown {
			c := s.Cost
			out.Usage.Cost = &c
		}
	}
	return out, true
}

// maxAnswer bounds the answer a child's outcome carries: facts stay small.
const maxAnswer = 8 << 10
