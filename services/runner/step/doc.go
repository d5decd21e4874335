// Package step is the runner's pure core: it reads where a run stands from
// its facts alone and decides what those facts imply, with no I/O, no
// clock and no NATS. It folds a run's spend and checks a model call against
// the budget before and after it (budget.go).
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
// so), so it cannot name the case's budget. It owns a small mirror type
// instead (Budget) and the runner converts at the boundary, with a test
// that the conversion carries every field.
package step
