package decider

import (
	"context"
	"errors"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/factline/factline/bus/bustest"
	"github.com/factline/factline/services/decider/stop"
	"github.com/factline/factline/services/kit"
)

func agree(context.Context, JudgeRequest) (stop.Opinion, error) { return stop.Opinion{}, nil }

// The decider's defaults are what they were before the kit: instances
// named <host>-<pid> (no role in front), the bus's delivery limit, no
// judge.
func TestDeciderDefaults(t *testing.T) {
	b, _ := bustest.Start(t)
	s, err := New(b)
	if err != nil {
		t.Fatal(err)
	}
	if in := s.sh.Instance; strings.HasPrefix(in, "decider-") || !strings.HasSuffix(in, "-"+strconv.Itoa(os.Getpid())) {
		t.Errorf("instance %q, want <host>-<pid>", in)
	}
	if c := s.sh.Consumer(); c.Name != ConsumerName || c.MaxDeliver != 0 || c.OnDemand {
		t.Errorf("consumer %+v", c)
	}
	if s.cfg.judge != nil {
		t.Error("a judge without WithJudge")
	}
}

func TestWithJudgeTakesAMinuteForNoTimeout(t *testing.T) {
	b, _ := bustest.Start(t)
	s, err := New(b, WithJudge(agree, 0))
	if err != nil {
		t.Fatal(err)
	}
	if s.cfg.judge == nil || s.cfg.judgeTimeout != time.Minute {
		t.Errorf("judge set %v, timeout %s", s.cfg.judge != nil, s.cfg.judgeTimeout)
	}
}

func TestWithJudgeRefusesANilJudge(t *testing.T) {
	b, _ := bustest.Start(t)
	if _, err := New(b, WithJudge(nil, time.Second)); !errors.Is(err, kit.ErrInvalidOption) || !strings.Contains(err.Error(), "WithJudge") {
		t.Fatalf("err = %v, want WithJudge refused", err)
	}
}

func TestWithJudgeRefusesANegativeTimeout(t *testing.T) {
	b, _ := bustest.Start(t)
	if _, err := New(b, WithJudge(agree, -time.Second)); !errors.Is(err, kit.ErrInvalidOption) || !strings.Contains(err.Error(), "negative") {
		t.Fatalf("err = %v, want WithJudge refused for its timeout", err)
	}
}
