package grader

import (
	"os"
	"testing"

	"github.com/factline/factline/bus"
	"github.com/factline/factline/bus/bustest"
	"github.com/factline/factline/events"
	"github.com/factline/factline/services/kit"
	"github.com/factline/factline/services/kit/kittest"
)

// The grader's defaults are what they were before the kit: instances
// named grader-<host>-<pid>, deliveries pulled on demand (an instrument
// may outlive the ack wait), the bus's delivery limit, candidates restored
// below the OS temporary directory, judges built by DefaultJudges.
func TestGraderDefaults(t *testing.T) {
	b, _ := bustest.Start(t)
	s := kittest.Must(New(b))
	kittest.Defaults(t, s.sh, "grader", bus.ConsumerConfig{Name: ConsumerName, OnDemand: true,
		Filters: []string{events.KindFilter(events.KindCandidateSealed), events.KindFilter(events.KindRunEnded)}})
	if s.cfg.workDir != os.TempDir() || s.cfg.judges == nil || s.cfg.hook != nil {
		t.Errorf("work dir %q, judges set %v, hook set %v", s.cfg.workDir, s.cfg.judges != nil, s.cfg.hook != nil)
	}
}

// refusedOption asserts that New refuses opt as option.
func refusedOption(t *testing.T, opt kit.Option, option string) {
	t.Helper()
	b, _ := bustest.Start(t)
	_, err := New(b, opt)
	kittest.Refused(t, err, option)
}

func TestWithWorkDirRefusesAnEmptyDir(t *testing.T) { refusedOption(t, WithWorkDir(""), "WithWorkDir") }

func TestWithJudgesRefusesNil(t *testing.T) { refusedOption(t, WithJudges(nil), "WithJudges") }

func TestWithExecuteHookRefusesNil(t *testing.T) {
	refusedOption(t, WithExecuteHook(nil), "WithExecuteHook")
}

// The grader keeps runs and cases, not suites.
func TestGraderRefusesASuiteCache(t *testing.T) {
	refusedOption(t, kit.WithSuiteCache(64), "WithSuiteCache")
}
