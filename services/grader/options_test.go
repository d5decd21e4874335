package grader

import (
	"errors"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/factline/factline/bus/bustest"
	"github.com/factline/factline/services/kit"
)

// The grader's defaults are what they were before the kit: instances
// named grader-<host>-<pid>, deliveries pulled on demand (an instrument
// may outlive the ack wait), the bus's delivery limit, candidates restored
// below the OS temporary directory, judges built by DefaultJudges.
func TestGraderDefaults(t *testing.T) {
	b, _ := bustest.Start(t)
	s, err := New(b)
	if err != nil {
		t.Fatal(err)
	}
	if in := s.sh.Instance; !strings.HasPrefix(in, "grader-") || !strings.HasSuffix(in, "-"+strconv.Itoa(os.Getpid())) {
		t.Errorf("instance %q, want grader-<host>-<pid>", in)
	}
	if c := s.sh.Consumer(); c.Name != ConsumerName || !c.OnDemand || c.MaxDeliver != 0 || len(c.Filters) != 2 {
		t.Errorf("consumer %+v", c)
	}
	if s.cfg.workDir != os.TempDir() || s.cfg.judges == nil || s.cfg.hook != nil {
		t.Errorf("work dir %q, judges set %v, hook set %v", s.cfg.workDir, s.cfg.judges != nil, s.cfg.hook != nil)
	}
}

// refusedOption asserts that New refused option.
func refusedOption(t *testing.T, opt kit.Option, option string) {
	t.Helper()
	b, _ := bustest.Start(t)
	_, err := New(b, opt)
	var oe *kit.OptionError
	if !errors.Is(err, kit.ErrInvalidOption) || !errors.As(err, &oe) || oe.Option != option {
		t.Fatalf("err = %v, want %s refused", err, option)
	}
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
