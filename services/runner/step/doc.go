// Package step is the runner's pure core: it reads where a run stands from
// its facts alone and decides what those facts imply, with no I/O, no
// clock and no NATS:
//
//   - progress.go: where the run stands and what it does next (Next);
//   - plan.go: what is done with each call of a reply (PlanCall): take it
//     as the log settled it, stop for a cancel, reject it for a typed
//     reason, run it in the workspace, send it behind the fence, reconcile
//     it; after a person's decision (Plan.Approved); and the actor intent
//     the turn records (TurnIntent);
//   - effect.go: the steps of settling an external effect (Effect), and
//     how long to wait before each: the fence and its verdict on a send
//     (AfterFence: send, or hand the run back), the send, the status
//     lookup (one that finds nothing within the settle window is made
//     again past it), a person, a look after an interrupted send, and how
//     the call is settled on what they found;
//   - left.go: how the calls of a reply the run ends around are settled
//     (PlanLeft), a lookup of one in flight believed as Settling says;
//   - fence.go: the bounds of the fence, what a runner knows of its hold
//     (Hold), whether an external effect may be sent now (maySend, which
//     AfterFence applies), and how long a lookup that finds nothing
//     proves nothing (notFoundWait, which AfterLookup, AfterLook and
//     Left.Found apply);
//   - ending.go: how a run ends and what its handoff names;
//   - claims.go: the newest lease, and whether the finish is decided;
//   - calls.go: the IDs of a reply's calls and their evidence refs;
//   - budget.go: the spend, and the budget checks before and after a call;
//   - history.go: the model-visible history under a context policy;
//   - verify.go: a declared check's output as a verification;
//   - cached.go: whether a cached reply is true to the call it cites.
//
// The runner is layered as etcd/raft is. raft.go is a pure state machine
// (Step) that decides everything; rawnode.go drives it synchronously,
// persisting and sending what it says; node.go is the goroutine shell
// around that. Here this package is the pure part: every decision a run's
// facts imply is made here, as a value the runner carries out. The
// runner's attempt (services/runner) is the synchronous driver of one run:
// it reads the log, asks this package, does the I/O the answer calls for
// and commits what it says, and decides nothing itself:
//
//   - attempt.go runs the loop on Progress.Next: a turn starts unless
//     Preflight refuses it, the model is asked, the reply is checked by
//     Overrun, its calls settled, the turn completed with TurnIntent;
//   - dispatch.go asks the registry what it says of each call's tool
//     (a Tool), carries out PlanCall's Plan and commits the dispatch;
//   - effects.go takes an external effect's steps as Effect says, each
//     after the wait it names: the fence (fence.go's renew and leader
//     read, reported as a Hold for AfterFence to judge), the send, the
//     lookup, the person; and settles the calls a run ends around as
//     PlanLeft says;
//   - controls.go collects signals and accepts them at the loop's safe
//     points;
//   - service.go is the goroutine shell of consumers, workers, leases and
//     control watches around many attempts, and owns what each attempt
//     opens (its directory, sandbox and extension servers).
//
// What the shell still judges are answers in vocabularies only it imports:
// which of a tool's error codes prove that an effect never left (and
// which leave its outcome unknown), how a tool run ended and what it did
// to the workspace, which of a model's errors and refusals end a run. A guard test (services/runner,
// TestOnlyTheCoreMakesAPerCallDecision) refuses a literal of this
// package's decision types (Plan, EffectStep, Left) anywhere in the
// runner; their fields are unexported, so no other package can fill one
// in.
//
// The package imports only events and the standard library (a test says
// so), so it cannot name the model port's message, the tool registry or
// the case's context policy, budget and diagnostic rule. It owns small
// mirror types instead (Message, ToolCall, ContextPolicy, Budget,
// DiagnosticRule, Tool), and the runner converts at the boundary
// (services/runner/convert.go, and toolFor in dispatch.go): the policy and
// the rule by Go type conversions, so that a field added on one side only
// stops the build, the messages and the budget by hand, checked field by
// field by the runner's Test*ConversionIsLossless tests. That keeps the
// history a function of facts and plain values, testable and replayable
// without a model or a case file, at the price of a conversion that must
// lose nothing: the request rendered from a history is digested into
// turn.started, and a takeover, possibly under another build, must rebuild
// it byte for byte. Moving the message type into events instead was
// rejected: a model message is a projection of facts, not a fact, and the
// log's vocabulary should not change when the model port does.
package step
