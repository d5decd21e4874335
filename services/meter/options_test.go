package meter

import (
	"testing"

	"github.com/factline/factline/bus"
	"github.com/factline/factline/bus/bustest"
	"github.com/factline/factline/events"
	"github.com/factline/factline/services/kit"
	"github.com/factline/factline/services/kit/kittest"
)

// The meter's defaults are what they were before the kit: instances named
// meter-<host>-<pid>, 64 suites kept folded, no run or policy cache, the
// bus's delivery limit.
func TestMeterDefaults(t *testing.T) {
	b, _ := bustest.Start(t)
	s := kittest.Must(New(b))
	kittest.Defaults(t, s.sh, "meter", bus.ConsumerConfig{Name: ConsumerName, Filters: []string{
		events.KindFilter(events.KindSuiteSubmitted), events.KindFilter(events.KindRunEnded), events.KindFilter(events.KindGradeVerdict)}})
	if s.sh.SuiteCache != 64 || s.sh.Runs != nil || s.sh.Policies != nil {
		t.Errorf("suite cache %d, run cache %v, policy cache %v", s.sh.SuiteCache, s.sh.Runs, s.sh.Policies)
	}
}

// The old WithCacheSize(suites) is WithSuiteCache; a run cache, which the
// staller, decider and grader keep, is refused rather than read as suites.
func TestMeterRefusesARunCache(t *testing.T) {
	b, _ := bustest.Start(t)
	_, err := New(b, kit.WithRunCache(64))
	kittest.Refused(t, err, "WithRunCache")
}

func TestMeterTakesASuiteCache(t *testing.T) {
	b, _ := bustest.Start(t)
	if s := kittest.Must(New(b, kit.WithSuiteCache(3))); s.sh.SuiteCache != 3 {
		t.Errorf("suite cache %d, want 3", s.sh.SuiteCache)
	}
}
