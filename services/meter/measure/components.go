package measure

import "encoding/json"

// stallKeysV1 maps the keys of the stall identity component as its
// version 1 wrote them (Go's field names) to those of version 2
// (suites.StallComponentVersion: snake_case, with "version": 2).
var stallKeysV1 = map[string]string{
	"RepeatedFailure": "repeated_failure", "RepeatedObservation": "repeated_observation",
	"RepeatedError": "repeated_error", "IdleTurns": "idle_turns", "Alternation": "alternation",
	"FailingVerifications": "failing_verifications", "RepairBudget": "repair_budget", "EscalateTo": "escalate_to",
}

// comparableValue is a component's value in the form in which values of every
// version of the component compare: the stall component's thresholds
// under their version 2 keys, without the version, and no escalation
// target where it is empty (version 1 always wrote one, version 2 leaves
// it out). Any other value, or one that is no JSON object, is itself.
func comparableValue(name, value string) string {
	if name != "stall" {
		return value
	}
	var m map[string]json.RawMessage
	if json.Unmarshal([]byte(value), &m) != nil || m == nil {
		return value
	}
	out := make(map[string]json.RawMessage, len(m))
	for k, v := range m {
		if to, ok := stallKeysV1[k]; ok {
			out[to] = v
		}
	}
	// A key in version 2's form wins over its version 1 twin (a value
	// that holds both is made by no writer, but must compare one way).
	for k, v := range m {
		if _, old := stallKeysV1[k]; !old && k != "version" {
			out[k] = v
		}
	}
	if e, ok := out["escalate_to"]; ok && string(e) == `""` {
		delete(out, "escalate_to")
	}
	b, err := json.Marshal(out) // keys sorted
	if err != nil {
		return value
	}
	return string(b)
}
