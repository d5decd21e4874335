package tools

import (
	"context"
	"encoding/json"
	"time"

	"github.com/factline/factline/events"
)

// TaskComplete is how the actor states its intent to finish: propose done,
// citing the evidence that shows it, or report that it is blocked. It is a
// proposal; the stop decider judges it.
type TaskComplete struct{}

// Contract implements Tool.
func (TaskComplete) Contract() Contract {
	return Contract{
		Name: "task_complete",
		Description: "Finish the task. status \"done\": cite in evidence the evidence refs (\"t<turn>/<call-id>\") " +
			"of the tool calls that show the work is done, e.g. a passing check. status \"blocked\": say why in reason " +
			"and list the requirement ids you could not meet in unmet. The harness checks the claim; it is not proof.",
		Schema: json.RawMessage(`{"type":"object","additionalProperties":false,"required":["status"],
"properties":{"status":{"enum":["done","blocked"]},
"evidence":{"type":"array","items":{"type":"string","minLength":1}},
"reason":{"type":"string"},
"unmet":{"type":"array","items":{"type":"string","minLength":1}}},
"if":{"properties":{"status":{"const":"blocked"}}},"then":{"required":["reason"],"properties":{"reason":{"minLength":1}}}}`),
		Effect: events.EffectRead, Approval: ApprovalNever, Timeout: time.Second,
		OutputCap: 1 << 10, Idempotent: true,
	}
}

// Run implements Tool.
func (TaskComplete) Run(_ context.Context, _ Env, raw json.RawMessage) Result {
	var a struct {
		Status   string
		Evidence []string
		Reason   string
		Unmet    []string
	}
	_ = json.Unmarshal(raw, &a)
	var intent events.ActorIntent
	if a.Status == "blocked" {
		unmet := make([]events.RequirementID, len(a.Unmet))
		for i, u := range a.Unmet {
			unmet[i] = events.RequirementID(u)
		}
		intent = events.ReportBlocked(a.Reason, unmet...)
	} else {
		ev := make([]events.EvidenceRef, len(a.Evidence))
		for i, e := range a.Evidence {
			ev[i] = events.EvidenceRef(e)
		}
		intent = events.ProposeDone(ev...)
	}
	return Result{Output: "recorded: " + a.Status + " (the harness will check it)", Intent: &intent}
}
