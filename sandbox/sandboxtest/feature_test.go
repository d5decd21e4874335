package sandboxtest

import (
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/factline/factline/events"
)

// verdict records what NeedActive told a test: nothing (it goes on), a
// skip or a failure, with the message.
type verdict struct {
	testing.TB
	skipped, failed bool
	msg             string
}

func (v *verdict) Helper() {}

func (v *verdict) Skipf(format string, args ...any) {
	v.skipped, v.msg = true, fmt.Sprintf(format, args...)
	runtime.Goexit()
}

func (v *verdict) Fatalf(format string, args ...any) {
	v.failed, v.msg = true, fmt.Sprintf(format, args...)
	runtime.Goexit()
}

// needActive runs NeedActive as a test would, stopping where it stops.
func needActive(f events.ContainmentFeature, asked uint64) *verdict {
	v := &verdict{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		NeedActive(v, f, asked)
	}()
	<-done
	return v
}

// An active feature lets the test go on.
func TestAnActiveFeatureLetsTheTestGoOn(t *testing.T) {
	v := needActive(events.ContainmentFeature{Name: featureAddressSpace, State: events.ContainmentActive, Limit: 1 << 28}, 1<<28)
	if v.skipped || v.failed {
		t.Fatalf("an active feature stopped the test: %+v", v)
	}
}

// A feature the probe left unsupported where the host can give it fails
// the test, never passes it: 1 byte of address space is below any hard
// limit, so no host lacks it.
func TestAnUnsupportedFeatureTheHostCanGiveFailsTheTest(t *testing.T) {
	f := events.ContainmentFeature{Name: featureAddressSpace, State: events.ContainmentUnsupported, Detail: "setrlimit: operation not permitted"}
	v := needActive(f, 1)
	if !v.failed || v.skipped {
		t.Fatalf("an unsupported feature the host can give: %+v, want a failure", v)
	}
	for _, want := range []string{featureAddressSpace, "unsupported", "setrlimit: operation not permitted", "yet this host can give it"} {
		if !strings.Contains(v.msg, want) {
			t.Errorf("the failure does not say %q: %s", want, v.msg)
		}
	}
}

// A feature nothing here can prove absent (a name HostLacks does not
// know) fails the test too: only a proven absence skips.
func TestAFeatureNotProvenAbsentFailsTheTest(t *testing.T) {
	v := needActive(events.ContainmentFeature{Name: "no_such_feature", State: events.ContainmentUnsupported}, 0)
	if !v.failed || v.skipped {
		t.Fatalf("an unknown feature: %+v, want a failure", v)
	}
}
