package meter

import (
	"errors"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/factline/factline/bus/bustest"
	"github.com/factline/factline/services/kit"
)

// The meter's defaults are what they were before the kit: instances named
// meter-<host>-<pid>, 64 suites kept folded, no run or policy cache, the
// bus's delivery limit.
func TestMeterDefaults(t *testing.T) {
	b, _ := bustest.Start(t)
	s, err := New(b)
	if err != nil {
		t.Fatal(err)
	}
	if in := s.sh.Instance; !strings.HasPrefix(in, "meter-") || !strings.HasSuffix(in, "-"+strconv.Itoa(os.Getpid())) {
		t.Errorf("instance %q, want meter-<host>-<pid>", in)
	}
	if s.sh.SuiteCache != 64 || s.sh.Runs != nil || s.sh.Policies != nil {
		t.Errorf("suite cache %d, run cache %v, policy cache %v", s.sh.SuiteCache, s.sh.Runs, s.sh.Policies)
	}
	if c := s.sh.Consumer(); c.Name != ConsumerName || c.MaxDeliver != 0 || c.OnDemand || len(c.Filters) != 3 {
		t.Errorf("consumer %+v", c)
	}
}

// WithCacheSize(suites) of old is WithSuiteCache; a run cache, which the
// staller, decider and grader keep, is refused rather than read as suites.
func TestMeterRefusesARunCache(t *testing.T) {
	b, _ := bustest.Start(t)
	if _, err := New(b, kit.WithRunCache(64)); !errors.Is(err, kit.ErrInvalidOption) {
		t.Fatalf("err = %v, want an invalid option", err)
	}
}

func TestMeterTakesASuiteCache(t *testing.T) {
	b, _ := bustest.Start(t)
	s, err := New(b, kit.WithSuiteCache(3))
	if err != nil {
		t.Fatal(err)
	}
	if s.sh.SuiteCache != 3 {
		t.Errorf("suite cache %d, want 3", s.sh.SuiteCache)
	}
}
