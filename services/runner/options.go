package runner

import (
	"fmt"
	"time"

	"github.com/factline/factline/events"
	"github.com/factline/factline/sandbox"
	"github.com/factline/factline/secrets"
	"github.com/factline/factline/services/kit"
	"github.com/factline/factline/services/runner/extensions"
)

// config is the runner's own settings, besides the kit's.
type config struct {
	workspaces      Workspaces
	models          ModelFactory
	workDir         string
	decisionTimeout time.Duration
	approvalTimeout time.Duration
	extensions      *extensions.Allowlist
	afterCommit     func(events.Fact)
	contain         *sandbox.Config
	secrets         *secrets.Redactor
	slotLease       time.Duration
	// handedBackListed is how many of the runs stopped at shutdown the
	// stopping runner's line names (0: every one).
	handedBackListed int
}

// WithWorkspaces sets how attempt workspaces are opened (default
// StoredWorkspaces on the runner's bus). A nil Workspaces is refused.
func WithWorkspaces(w Workspaces) kit.Option {
	return kit.OwnIf("WithWorkspaces", w != nil, "the workspaces are nil", func(c *config) { c.workspaces = w })
}

// WithModels sets how the model an attempt talks to is built (default
// Models). A nil factory is refused.
func WithModels(f ModelFactory) kit.Option {
	return kit.OwnIf("WithModels", f != nil, "the model factory is nil", func(c *config) { c.models = f })
}

// WithWorkDir sets where attempt directories are made (default the OS
// temporary directory), each named after the runner's process; what dead
// runners left there is removed when a runner starts and before each
// attempt (sandbox.Reap). An empty dir is refused.
func WithWorkDir(dir string) kit.Option {
	return kit.OwnIf("WithWorkDir", dir != "", "the work directory is empty", func(c *config) { c.workDir = dir })
}

// WithDecisionTimeout bounds the wait for a turn's stop decision (default
// 10m); then the run ends errored, naming the turn. A wait that is not
// positive is refused.
func WithDecisionTimeout(d time.Duration) kit.Option {
	return kit.OwnIf("WithDecisionTimeout", d > 0, fmt.Sprintf("the decision timeout %s is not positive", d),
		func(c *config) { c.decisionTimeout = d })
}

// WithApprovalTimeout bounds the wait for a person to approve an
// operation; then it counts as rejected (default 1h). A wait that is not
// positive is refused.
func WithApprovalTimeout(d time.Duration) kit.Option {
	return kit.OwnIf("WithApprovalTimeout", d > 0, fmt.Sprintf("the approval timeout %s is not positive", d),
		func(c *config) { c.approvalTimeout = d })
}

// WithExtensions sets the allowlist of the extensions (MCP servers) runs
// may use; a case naming any other is refused (docs/extensions.md).
// Without it runs may use none. A nil allowlist is refused: leave the
// option out instead.
func WithExtensions(l *extensions.Allowlist) kit.Option {
	return kit.OwnIf("WithExtensions", l != nil, "the allowlist is nil", func(c *config) { c.extensions = l })
}

// WithAfterCommit calls fn after every fact the runner commits: the hook
// fault-injection tests use to kill a runner between facts. A nil fn is
// refused.
func WithAfterCommit(fn func(events.Fact)) kit.Option {
	return kit.OwnIf("WithAfterCommit", fn != nil, "the hook is nil", func(c *config) { c.afterCommit = fn })
}

// WithContainment sets how commands are contained (default: every
// feature, at sandbox.DefaultLimits). Its WorkDir is the runner's (see
// WithWorkDir). What the host grants is probed once, in New, and recorded
// in every run.claimed.
func WithContainment(cfg sandbox.Config) kit.Option {
	return kit.Own("WithContainment", func(c *config) error { c.contain = &cfg; return nil })
}

// WithSecrets sets the secrets redacted from every fact, blob and log line
// the runner writes (default: secrets.FromEnvironment). A nil redactor is
// refused.
func WithSecrets(r *secrets.Redactor) kit.Option {
	return kit.OwnIf("WithSecrets", r != nil, "the redactor is nil", func(c *config) { c.secrets = r })
}
