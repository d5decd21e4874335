package runner_test

import (
	"context"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/factline/factline/bus"
	"github.com/factline/factline/bus/bustest"
	"github.com/factline/factline/events"
	"github.com/factline/factline/fleet/fleettest"
	"github.com/factline/factline/services/kit"
	"github.com/factline/factline/services/runner"
)

// longFleet is one runner and the stub decider on an embedded server, for
// long runs of a scripted model.
type longFleet struct {
	b   *bus.Bus
	svc *runner.Service
	ctx context.Context
}

// startLongFleet starts the fleet; it stops when tb ends.
func startLongFleet(tb testing.TB) *longFleet {
	b, _ := bustest.Start(tb)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	svc, err := runner.New(b, runner.WithWorkDir(tb.TempDir()), kit.WithWorkers(1), runner.WithDecisionTimeout(time.Minute))
	must(tb, err)
	done := make(chan struct{}, 2)
	go func() { _ = svc.Run(ctx); done <- struct{}{} }()
	go func() { _ = fleettest.Decider{Bus: b}.Run(ctx); done <- struct{}{} }()
	tb.Cleanup(func() { cancel(); <-done; <-done })
	return &longFleet{b: b, svc: svc, ctx: ctx}
}

// run plays one run of the given turns (each reads a file, the last
// answers) and returns its log once it ended.
func (f *longFleet) run(tb testing.TB, run string, turns int) bus.RunLog {
	tb.Helper()
	var turnsYAML []string
	for range turns - 1 {
		turnsYAML = append(turnsYAML, "  - calls: [{name: read_file, args: {path: answer.txt}}]\n")
	}
	turnsYAML = append(turnsYAML, "  - text: done\n")
	p, err := fleettest.Publish(f.ctx, f.b, fixtureCase(tb, fmt.Sprintf("{steps: %d}", turns+10)), treatment(tb, script(turnsYAML...)))
	must(tb, err)
	must(tb, fleettest.Request(f.ctx, f.b, "suite", run, p, 1))
	log, end, err := fleettest.WaitEnded(f.ctx, f.b, "suite", run)
	must(tb, err)
	if n := len(kinds(log, events.KindTurnStarted)); n != turns {
		tb.Fatalf("%d turns (run ended %s: %s), want %d", n, end.Status, end.Reason, turns)
	}
	return log
}

// An attempt keeps its run's standing as a fold: each step folds the
// facts since its last look, not the whole log again, so over a run the
// attempt folds about as many facts as the run holds. Reading the whole log
// at every step (ReadProgress at each of a turn's several steps) folds
// thousands for a run of 30 turns.
func TestAnAttemptFoldsEachFactOfItsRunAboutOnce(t *testing.T) {
	f := startLongFleet(t)
	var folded atomic.Int64
	var held atomic.Int32
	runner.SetAfterLoop(t, f.svc, func(run string, n int64, facts int) {
		if run == "long" {
			folded.Store(n)
			held.Store(int32(facts))
		}
	})
	log := f.run(t, "long", 30)
	n, facts := folded.Load(), int(held.Load())
	if facts == 0 || facts > len(log.Records) {
		t.Fatalf("the attempt's last look held %d facts of the run's %d", facts, len(log.Records))
	}
	// Each fact once, and the log once more for a look that found it no
	// extension of the last (none is expected on one runner; one is let
	// pass).
	if n > int64(2*facts) {
		t.Fatalf("the attempt folded %d facts for a run of %d: the whole log again at some steps", n, facts)
	}
}

// BenchmarkTurnByRunLength plays whole runs of 20, 60 and 180 turns on one
// runner and reports a turn's cost: on average (ns/turn), and the median
// of the last ten turns over that of the first ten (late/early, from the
// turns' own turn.started times), which stays near 1 while a turn's cost
// does not grow with the run.
func BenchmarkTurnByRunLength(b *testing.B) {
	for _, turns := range []int{20, 60, 180} {
		b.Run(fmt.Sprintf("turns=%d", turns), func(b *testing.B) {
			f := startLongFleet(b)
			var ratios []float64
			i := 0
			for b.Loop() {
				log := f.run(b, fmt.Sprintf("long-%d", i), turns)
				i++
				var at []time.Time
				for _, s := range kinds(log, events.KindTurnStarted) {
					at = append(at, s.At)
				}
				early, late := medianGap(at[:11]), medianGap(at[len(at)-11:])
				ratios = append(ratios, float64(late)/float64(early))
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*turns), "ns/turn")
			slices.Sort(ratios)
			b.ReportMetric(ratios[len(ratios)/2], "late/early")
		})
	}
}

// medianGap is the median of the gaps between consecutive times.
func medianGap(at []time.Time) time.Duration {
	gaps := make([]time.Duration, 0, len(at)-1)
	for i := 1; i < len(at); i++ {
		gaps = append(gaps, at[i].Sub(at[i-1]))
	}
	slices.Sort(gaps)
	return gaps[len(gaps)/2]
}
