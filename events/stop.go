package events

import "slices"

// FinishStatus is how a finishing stop decision ends the task.
type FinishStatus string

// Finish statuses. Blocked and incomplete are honest endings; only done
// claims the task, and done never has unmet requirements.
const (
	FinishDone       FinishStatus = "done"
	FinishBlocked    FinishStatus = "blocked"
	FinishIncomplete FinishStatus = "incomplete"
)

var finishStatuses = []FinishStatus{FinishDone, FinishBlocked, FinishIncomplete}

// FinishStatuses lists every status a finishing stop decision may give.
func FinishStatuses() []FinishStatus { return slices.Clone(finishStatuses) }

// StopDecision is the one committed decision for one completed turn.
type StopDecision struct {
	DecisionID     string     `msgpack:"decision_id"`
	Turn           uint32     `msgpack:"turn"`
	TaskGeneration uint32     `msgpack:"task_generation"`
	Result         StopResult `msgpack:"result"`
}

func (d StopDecision) validate(p string) error {
	if err := needString(p, "decision_id", d.DecisionID); err != nil {
		return err
	}
	if err := needPositive(p, "turn", d.Turn); err != nil {
		return err
	}
	if err := needPositive(p, "task_generation", d.TaskGeneration); err != nil {
		return err
	}
	return d.Result.validate(join(p, "result"))
}

// StopResult is continue{unmet, feedback} | finish{status, supported, unmet,
// evidence, reason}.
type StopResult struct{ union[stopSpec] }

// StopContinue asks for another turn, saying what is still unmet.
type StopContinue struct {
	Unmet    []RequirementID `msgpack:"unmet"`
	Feedback string          `msgpack:"feedback,omitempty"`
}

// StopFinish ends the task with a status.
type StopFinish struct {
	Status    FinishStatus    `msgpack:"status"`
	Supported []RequirementID `msgpack:"supported"`
	Unmet     []RequirementID `msgpack:"unmet"`
	Evidence  []EvidenceRef   `msgpack:"evidence"`
	Reason    string          `msgpack:"reason"`
}

func (StopContinue) variantType() string { return "continue" }
func (StopFinish) variantType() string   { return "finish" }

func (v StopContinue) validate(p string) error { return eachString(p, "unmet", v.Unmet) }

func (v StopFinish) validate(p string) error {
	if err := needOneOf(p, "status", v.Status, finishStatuses); err != nil {
		return err
	}
	if err := eachString(p, "supported", v.Supported); err != nil {
		return err
	}
	if err := eachString(p, "unmet", v.Unmet); err != nil {
		return err
	}
	if v.Status == FinishDone && len(v.Unmet) > 0 {
		return invalid(join(p, "unmet"), "a done finish cannot leave requirements unmet (%d given)", len(v.Unmet))
	}
	if err := eachString(p, "evidence", v.Evidence); err != nil {
		return err
	}
	return needString(p, "reason", v.Reason)
}

type stopSpec struct{}

func (stopSpec) names() []string { return stopNames }

var stopNames = []string{"continue", "finish"}

func (stopSpec) variants() map[string]func() variant { return stopVariants }

var stopVariants = map[string]func() variant{
	"continue": func() variant { return &StopContinue{} },
	"finish":   func() variant { return &StopFinish{} },
}

// ContinueWith returns a continue result.
func ContinueWith(feedback string, unmet ...RequirementID) StopResult {
	return StopResult{union[stopSpec]{StopContinue{Unmet: unmet, Feedback: feedback}}}
}

// Finish returns a finish result.
func Finish(f StopFinish) StopResult { return StopResult{union[stopSpec]{f}} }
