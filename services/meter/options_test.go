package meter

import (
	"testing"

	"github.com/factline/factline/bus"
	"github.com/factline/factline/bus/bustest"
	"github.com/factline/factline/events"
	"github.com/factline/factline/services/kit"
	"github.com/factline/factline/services/kit/kittest"
	"github.com/factline/factline/services/meter/measure"
)

// The meter's defaults are what they were before the kit: instances named
// meter-<host>-<pid>, 64 suites kept folded, no run or policy cache, the
// bus's delivery limit.
func TestMeterDefaults(t *testing.T) {
	b, _ := bustest.Start(t)
	s := kittest.Must(New(b))
	kittest.Defaults(t, s.sh, "meter", bus.ConsumerConfig{Name: ConsumerName, Filters: []string{
		events.KindFilter(events.KindSuiteSubmitted), events.KindFilter(events.KindRunEnded), events.KindFilter(events.KindGradeVerdict),
		events.KindFilter(events.KindSuiteControlled)}})
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

// The meter requests a suite 1024 runs ahead of the runs ended unless told
// otherwise; a window below one, which could request nothing, is refused,
// and so is the meter's window given to another service.
func TestMeterRequestWindow(t *testing.T) {
	b, _ := bustest.Start(t)
	if s := kittest.Must(New(b)); s.window != measure.DefaultWindow || measure.DefaultWindow != 1024 {
		t.Errorf("default window %d (DefaultWindow %d), want 1024", s.window, measure.DefaultWindow)
	}
	if s := kittest.Must(New(b, WithRequestWindow(5))); s.window != 5 {
		t.Errorf("window %d, want 5", s.window)
	}
	_, err := New(b, WithRequestWindow(0))
	kittest.Refused(t, err, "WithRequestWindow")
	_, err = kit.New[struct{}](b, kit.Spec{Owner: events.OwnerRunner, Consumer: "x", Filters: []string{"fact.>"}}, nil, WithRequestWindow(5))
	kittest.Refused(t, err, "WithRequestWindow")
}
