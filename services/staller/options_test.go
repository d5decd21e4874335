package staller

import (
	"testing"

	"github.com/factline/factline/bus"
	"github.com/factline/factline/bus/bustest"
	"github.com/factline/factline/events"
	"github.com/factline/factline/services/kit"
	"github.com/factline/factline/services/kit/kittest"
)

// The staller's defaults are what they were before the kit: instances
// named <host>-<pid> (no role in front, unlike the grader's and the
// meter's) and a delivery tried ten times; and since issue 24, several
// runs observed at once, each run's turns in order.
func TestStallerDefaults(t *testing.T) {
	b, _ := bustest.Start(t)
	s := kittest.Must(New(b))
	kittest.Defaults(t, s.sh, "", bus.ConsumerConfig{Name: ConsumerName, MaxDeliver: 10,
		Filters: []string{events.KindFilter(events.KindTurnCompleted)}, Workers: DefaultWorkers, OrderByRun: true})
}

// The staller keeps runs and cases, not suites: the meter's cache size is
// refused, not taken for one of its own.
func TestStallerRefusesASuiteCache(t *testing.T) {
	b, _ := bustest.Start(t)
	_, err := New(b, kit.WithSuiteCache(64))
	kittest.Refused(t, err, "WithSuiteCache")
}
