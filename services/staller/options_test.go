package staller

import (
	"errors"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/factline/factline/bus/bustest"
	"github.com/factline/factline/services/kit"
)

// The staller's defaults are what they were before the kit: instances
// named <host>-<pid> (no role in front, unlike the grader's and the
// meter's), a delivery tried ten times, its own consumer.
func TestStallerDefaults(t *testing.T) {
	b, _ := bustest.Start(t)
	s, err := New(b)
	if err != nil {
		t.Fatal(err)
	}
	if in := s.sh.Instance; strings.HasPrefix(in, "staller-") || !strings.HasSuffix(in, "-"+strconv.Itoa(os.Getpid())) {
		t.Errorf("instance %q, want <host>-<pid>", in)
	}
	if c := s.sh.Consumer(); c.Name != ConsumerName || c.MaxDeliver != 10 || c.OnDemand {
		t.Errorf("consumer %+v", c)
	}
}

// The staller keeps runs and cases, not suites: the meter's cache size is
// refused, not taken for one of its own.
func TestStallerRefusesASuiteCache(t *testing.T) {
	b, _ := bustest.Start(t)
	if _, err := New(b, kit.WithSuiteCache(64)); !errors.Is(err, kit.ErrInvalidOption) {
		t.Fatalf("err = %v, want an invalid option", err)
	}
}
