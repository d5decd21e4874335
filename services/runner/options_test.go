package runner

import (
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/factline/factline/bus"
	"github.com/factline/factline/bus/bustest"
	"github.com/factline/factline/events"
	"github.com/factline/factline/services/kit"
	"github.com/factline/factline/services/kit/kittest"
)

// The runner's defaults are what they were before the kit: instances
// named runner-<host>-<pid>, one run at a time, requests pulled on demand
// (a run outlives the ack wait) and tried five times, the bus's 30s ack
// wait, four cached runs a worker, attempts below the OS temporary
// directory in workspaces stored on its own bus, models built by Models,
// ten minutes for a stop decision, an hour for an approval, no
// extensions, and a dead-lettered request ended as given up.
func TestRunnerDefaults(t *testing.T) {
	b, _ := bustest.Start(t)
	s := kittest.Must(New(b))
	kittest.Defaults(t, s.sh, "runner", bus.ConsumerConfig{Name: ConsumerName, MaxDeliver: 5, OnDemand: true,
		Filters: []string{events.KindFilter(events.KindRunRequested), events.KindFilter(events.KindRunDelegated)}})
	c := s.sh.Consumer()
	if c.Workers != 0 || c.AckWait != 0 || c.OnDeadLetter == nil {
		t.Errorf("consumer: workers %d (want the bus's 1), ack wait %s (want the bus's 30s), dead letters handled %v", c.Workers, c.AckWait, c.OnDeadLetter != nil)
	}
	if n := s.sh.RunCacheSize(); n != 4 || s.runs != s.sh.Runs {
		t.Errorf("run cache of %d, want 4", n)
	}
	if s.workDir != os.TempDir() || s.decisionTimeout != 10*time.Minute || s.approvalTimeout != time.Hour ||
		s.extensions != nil || s.afterCommit != nil || s.models == nil || s.secrets == nil {
		t.Errorf("work dir %q, decision timeout %s, approval timeout %s, extensions %v, hook %v, models %v, secrets %v",
			s.workDir, s.decisionTimeout, s.approvalTimeout, s.extensions, s.afterCommit != nil, s.models != nil, s.secrets != nil)
	}
	if !reflect.DeepEqual(s.workspaces, StoredWorkspaces{Blobs: b.Blobs()}) {
		t.Errorf("workspaces %#v, want stored on the runner's bus", s.workspaces)
	}
}

// The run cache follows the runs driven at once, as it did with
// Concurrency: four runs a worker.
func TestRunnerRunCacheFollowsItsWorkers(t *testing.T) {
	b, _ := bustest.Start(t)
	s := kittest.Must(New(b, kit.WithWorkers(3)))
	if n := s.sh.RunCacheSize(); n != 12 || s.sh.Consumer().Workers != 3 {
		t.Errorf("run cache of %d for %d workers, want 12 for 3", n, s.sh.Consumer().Workers)
	}
}

func TestRunnerOptionsApply(t *testing.T) {
	b, _ := bustest.Start(t)
	dir := t.TempDir()
	s := kittest.Must(New(b, kit.WithInstance("r-1"), WithWorkDir(dir), WithDecisionTimeout(time.Second),
		WithApprovalTimeout(2*time.Second), WithAfterCommit(func(events.Fact) {})))
	if s.instance != "r-1" || s.workDir != dir || s.decisionTimeout != time.Second || s.approvalTimeout != 2*time.Second || s.afterCommit == nil {
		t.Errorf("instance %q, work dir %q, decision timeout %s, approval timeout %s, hook %v",
			s.instance, s.workDir, s.decisionTimeout, s.approvalTimeout, s.afterCommit != nil)
	}
}

// refusedOption asserts that New refuses opt as option.
func refusedOption(t *testing.T, opt kit.Option, option string) {
	t.Helper()
	b, _ := bustest.Start(t)
	_, err := New(b, opt)
	kittest.Refused(t, err, option)
}

func TestWithWorkspacesRefusesNil(t *testing.T) {
	refusedOption(t, WithWorkspaces(nil), "WithWorkspaces")
}

func TestWithModelsRefusesNil(t *testing.T) { refusedOption(t, WithModels(nil), "WithModels") }

func TestWithWorkDirRefusesAnEmptyDir(t *testing.T) { refusedOption(t, WithWorkDir(""), "WithWorkDir") }

func TestWithDecisionTimeoutRefusesANonPositiveWait(t *testing.T) {
	refusedOption(t, WithDecisionTimeout(0), "WithDecisionTimeout")
}

func TestWithApprovalTimeoutRefusesANonPositiveWait(t *testing.T) {
	refusedOption(t, WithApprovalTimeout(-time.Second), "WithApprovalTimeout")
}

func TestWithExtensionsRefusesNil(t *testing.T) {
	refusedOption(t, WithExtensions(nil), "WithExtensions")
}

func TestWithAfterCommitRefusesNil(t *testing.T) {
	refusedOption(t, WithAfterCommit(nil), "WithAfterCommit")
}

func TestWithSecretsRefusesNil(t *testing.T) { refusedOption(t, WithSecrets(nil), "WithSecrets") }

// The runner reads a run's case itself, once per attempt: it keeps no
// policy cache, and folds no suites.
func TestRunnerRefusesAPolicyCache(t *testing.T) {
	refusedOption(t, kit.WithPolicyCache(64), "WithPolicyCache")
}

func TestRunnerRefusesASuiteCache(t *testing.T) {
	refusedOption(t, kit.WithSuiteCache(64), "WithSuiteCache")
}

// Another service's own option (here one of a made-up service) is refused,
// not applied to the runner's settings.
func TestRunnerRefusesAnotherServicesOption(t *testing.T) {
	type judgeSettings struct{ judge string }
	refusedOption(t, kit.Own("WithJudge", func(j *judgeSettings) error { j.judge = "x"; return nil }), "WithJudge")
}

// An ack wait too short to fence external effects is refused, by either
// option that sets it, naming the minimum; the minimum itself is taken.
func TestRunnerRefusesAnAckWaitItCannotFence(t *testing.T) {
	refusedOption(t, kit.WithAckWait(MinAckWait-time.Millisecond), "WithAckWait")
	refusedOption(t, kit.WithConsumer(bus.ConsumerConfig{AckWait: time.Second}), "WithAckWait")
	b, _ := bustest.Start(t)
	if _, err := New(b, kit.WithAckWait(time.Second)); err == nil || !strings.Contains(err.Error(), "at least 2s") {
		t.Errorf("ack wait 1s: %v, want a refusal naming the 2s minimum", err)
	}
	kittest.Must(New(b, kit.WithAckWait(MinAckWait)))
}
