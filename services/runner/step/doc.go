// Package step is the runner's pure core: it reads where a run stands from
// its facts alone and decides what those facts imply, with no I/O, no
// clock and no NATS:
//
//   - progress.go: where the run stands and what it does next (Next);
//   - ending.go: how a run ends and what its handoff names;
//   - claims.go: the newest lease, and whether the finish is decided;
//   - calls.go: the IDs of a reply's calls and their evidence refs;
//   - budget.go: the spend, and the budget checks before and after a call;
//   - history.go: the model-visible history under a context policy;
//   - verify.go: a declared check's output as a verification.
//
// The runner is layered as etcd/raft is. raft.go is a pure state machine
// (Step); rawnode.go drives it synchronously; node.go is the goroutine
// shell around that. Here this package is the pure part, named for raft's
// Step: it says what a run's facts imply for its next step and takes none.
// The runner's attempt (services/runner, attempt.go and dispatch.go) is the
// synchronous driver of one run: it reads the log, asks this package where
// the run stands and takes the next step (a model call, a tool, a commit).
// The runner's Service (service.go) is the goroutine shell of consumers,
// workers, leases and control watches around many attempts.
//
// The package imports only events and the standard library (a test says
// so), so it cannot name the model port's message or the case's context
// policy, budget and diagnostic rule. It owns small mirror types instead
// (Message, ToolCall, ContextPolicy, Budget, DiagnosticRule), and the
// runner converts at the boundary (services/runner/convert.go): the policy
// and the rule by Go type conversions, so that a field added on one side
// only stops the build, the messages and the budget by hand, checked field
// by field by the runner's Test*ConversionIsLossless tests. That keeps the
// history a function of facts and plain values, testable and replayable
// without a model or a case file, at the price of a conversion that must
// lose nothing: the request rendered from a history is digested into
// turn.started, and a takeover, possibly under another build, must rebuild
// it byte for byte. Moving the message type into events instead was
// rejected: a model message is a projection of facts, not a fact, and the
// log's vocabulary should not change when the model port does.
package step
