package bench

import (
	"context"
	"fmt"
	"path/filepath"
	"time"
)

// sweepPoint is one configuration of B7: runs at once, and instances of
// every service (the runners sharing the runs).
type sweepPoint struct {
	Runs, Instances int
}

func (p sweepPoint) String() string {
	return fmt.Sprintf("%d runs, %d instance(s)", p.Runs, p.Instances)
}

// sweepPoints are B7's configurations: every concurrency with one
// instance of each service, then the largest concurrency with each of
// the other instance counts.
func sweepPoints(runs, instances []int) []sweepPoint {
	var out []sweepPoint
	for _, r := range runs {
		out = append(out, sweepPoint{Runs: r, Instances: 1})
	}
	if len(runs) == 0 {
		return out
	}
	top := runs[len(runs)-1]
	for _, n := range instances {
		if n != 1 {
			out = append(out, sweepPoint{Runs: top, Instances: n})
		}
	}
	return out
}

// benchSweep runs one suite of p.Runs concurrent runs of turns turns and
// returns its turns per second from the submission to suite.reported, by
// the server's timestamps of the suite's facts (timeSuite). It
// runs on the fleet B2 and B3 use (one instance of every service, the
// runner with a slot for every run); for more instances, p.Instances−1
// more of every service join it for the suite and leave after. They are
// added, each on a connection of its own, rather than a fleet of
// p.Instances started (see startServices).
func benchSweep(ctx context.Context, s *server, dir, name string, p sweepPoint, turns int, cfg Config) (float64, error) {
	stop := func() error { return nil }
	if p.Instances > 1 {
		var err error
		extra := p.Runs * (p.Instances - 1) / p.Instances
		if stop, err = startServices(ctx, s.b, extra, p.Instances-1, filepath.Join(dir, "work-"+name), cfg.Logger, s.connect); err != nil {
			return 0, err
		}
	}
	err := submitSuite(ctx, s.b, filepath.Join(dir, "suites"), name, p.Runs, turns)
	if err == nil {
		err = awaitReported(ctx, s.b, []string{name}, 5*time.Minute)
	}
	var el time.Duration
	if err == nil {
		el, err = timeSuite(ctx, s.b, name)
	}
	if serr := stop(); err == nil && serr != nil {
		err = fmt.Errorf("services: %w", serr)
	}
	if err != nil {
		return 0, fmt.Errorf("B7 %s: %w", p, err)
	}
	return float64(p.Runs*turns) / el.Seconds(), nil
}
