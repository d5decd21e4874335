package decider

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/factline/factline/bus"
	"github.com/factline/factline/bus/bustest"
	"github.com/factline/factline/events"
	"github.com/factline/factline/services/decider/stop"
	"github.com/factline/factline/services/kit/kittest"
)

func agree(context.Context, JudgeRequest) (stop.Opinion, error) { return stop.Opinion{}, nil }

// The decider's defaults are what they were before the kit: instances
// named <host>-<pid> (no role in front), the bus's delivery limit, no
// judge; and since issue 24, several runs decided at once, each run's
// turns in order.
func TestDeciderDefaults(t *testing.T) {
	b, _ := bustest.Start(t)
	s := kittest.Must(New(b))
	kittest.Defaults(t, s.sh, "", bus.ConsumerConfig{Name: ConsumerName,
		Filters: []string{events.KindFilter(events.KindStallObserved)}, Workers: DefaultWorkers, OrderByRun: true})
	if s.cfg.judge != nil {
		t.Error("a judge without WithJudge")
	}
}

func TestWithJudgeTakesAMinuteForNoTimeout(t *testing.T) {
	b, _ := bustest.Start(t)
	s := kittest.Must(New(b, WithJudge(agree, 0)))
	if s.cfg.judge == nil || s.cfg.judgeTimeout != time.Minute {
		t.Errorf("judge set %v, timeout %s", s.cfg.judge != nil, s.cfg.judgeTimeout)
	}
}

func TestWithJudgeRefusesANilJudge(t *testing.T) {
	b, _ := bustest.Start(t)
	_, err := New(b, WithJudge(nil, time.Second))
	kittest.Refused(t, err, "WithJudge")
}

func TestWithJudgeRefusesANegativeTimeout(t *testing.T) {
	b, _ := bustest.Start(t)
	_, err := New(b, WithJudge(agree, -time.Second))
	if oe := kittest.Refused(t, err, "WithJudge"); !strings.Contains(oe.Reason, "negative") {
		t.Errorf("reason %q does not name the timeout", oe.Reason)
	}
}
