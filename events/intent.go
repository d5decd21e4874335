package events

// ActorIntent is what the actor proposes at the end of a turn:
// continue | propose_done{evidence} | report_blocked{reason, unmet}.
// It is a proposal, never proof; the stop decider judges it.
type ActorIntent struct{ union[intentSpec] }

// IntentContinue says the actor wants another turn.
type IntentContinue struct{}

// IntentProposeDone says the actor believes the task is done and cites the
// evidence that shows it.
type IntentProposeDone struct {
	Evidence []EvidenceRef `msgpack:"evidence"`
}

// IntentReportBlocked says the actor cannot go on, why, and which
// requirements stay unmet.
type IntentReportBlocked struct {
	Reason string          `msgpack:"reason"`
	Unmet  []RequirementID `msgpack:"unmet"`
}

func (IntentContinue) variantType() string      { return "continue" }
func (IntentProposeDone) variantType() string   { return "propose_done" }
func (IntentReportBlocked) variantType() string { return "report_blocked" }

func (v IntentProposeDone) validate(p string) error {
	return eachString(p, "evidence", v.Evidence)
}

func (v IntentReportBlocked) validate(p string) error {
	if err := needString(p, "reason", v.Reason); err != nil {
		return err
	}
	return eachString(p, "unmet", v.Unmet)
}

type intentSpec struct{}

func (intentSpec) names() []string { return intentNames }

var intentNames = []string{"continue", "propose_done", "report_blocked"}

func (intentSpec) variants() map[string]func() variant { return intentVariants }

var intentVariants = map[string]func() variant{
	"continue":       func() variant { return &IntentContinue{} },
	"propose_done":   func() variant { return &IntentProposeDone{} },
	"report_blocked": func() variant { return &IntentReportBlocked{} },
}

// Continue returns the continue intent.
func Continue() ActorIntent { return ActorIntent{union[intentSpec]{IntentContinue{}}} }

// ProposeDone returns a propose_done intent citing evidence.
func ProposeDone(evidence ...EvidenceRef) ActorIntent {
	return ActorIntent{union[intentSpec]{IntentProposeDone{Evidence: evidence}}}
}

// ReportBlocked returns a report_blocked intent.
func ReportBlocked(reason string, unmet ...RequirementID) ActorIntent {
	return ActorIntent{union[intentSpec]{IntentReportBlocked{Reason: reason, Unmet: unmet}}}
}
