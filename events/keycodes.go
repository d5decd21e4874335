package events

// Envelope version 3 writes a body's map keys as numbers: a key's number is
// its index in bodyKeys. The table is part of the wire format (docs/facts.md
// lists it): a number is never reused or renumbered, and a new field's key
// takes the next free one at the end. Numbers below 128 take one byte on the
// wire (a msgpack positive fixint), so the keys of the facts every turn
// writes come first. A key the table lacks is written as its string, which
// every reader accepts.
var bodyKeys = [...]string{
	"", "context_digest", "messages", "policy", "turn", "calls", "args", "args_digest", "id", "name",
	"finish", "model", "provider", "reply_digest", "text", "usage", "cost", "input_tokens",
	"output_tokens", "call_id", "effect", "operation_id", "tool", "dispatch", "disposition",
	"evidence_ref", "mutation", "verification", "complete", "diagnostics", "code", "file", "line",
	"message", "source_epoch", "type", "output", "output_digest", "evidence", "actor_intent",
	"dispatches", "evidence_position", "run_id", "task_generation", "observation", "checkpoint",
	"episode", "open_failure", "repairs_used", "signature", "write_credit", "position", "decision",
	"decision_id", "result", "feedback", "unmet", "accepted_control", "signal", "reason", "action",
	"cause", "armed", "feedback_delivered", "opportunity", "target", "remaining", "status", "supported",
	"judge", "millis", "cached", "entry", "run", "suite", "text_digest", "queue_wait_ms", "child",
	"answer", "charged", "steps", "error", "retryable", "outcome", "delegation", "wall_millis", "lease",
	"resume_from", "runner", "budget", "seconds", "tokens", "case", "case_digest", "treatment",
	"treatment_digest", "trial", "last_evidence", "next_action", "spent", "files", "fixture_digest",
	"snapshot_digest", "from", "request_digest", "reserve", "summary", "through", "control",
	"operation", "instruction", "conflicts_with", "instrument", "revision", "detail", "required",
	"version", "containment", "features", "limit", "state", "image", "digest", "ref",
	"cached_input_tokens", "reasoning_tokens", "score", "reasons", "source", "values", "value", "tests",
	"cases", "errored", "failed", "passed", "skipped", "unlisted", "verdict", "attempt_id",
	"instruments", "snapshot_id", "vetoes", "binding", "requirement", "missing", "scores", "key", "max",
	"min", "pass_at", "raw", "scorer", "lower_is_better", "extensions", "command", "executable",
	"protocol", "server", "tools", "approval", "withheld", "identity", "parent", "request",
	"components", "retry_of", "abstained", "attempts", "excluded", "invalid", "pending",
	"report_digest", "comparison", "confidence", "high", "low", "pairs", "spec_digest", "treatments",
	"trials", "split", "valid_outcomes", "generation", "cache_identity", "cache_write_input_tokens",
	"check", "instance", "service", "containment_digest",
}

// bodyKeyCodes inverts bodyKeys.
var bodyKeyCodes = func() map[string]uint64 {
	m := make(map[string]uint64, len(bodyKeys))
	for i, k := range bodyKeys[1:] {
		if _, dup := m[k]; dup {
			panic("events: body key " + k + " numbered twice")
		}
		m[k] = uint64(i + 1)
	}
	return m
}()
