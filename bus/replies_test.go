package bus_test

import (
	"fmt"
	"sync"
	"testing"

	"github.com/factline/factline/bus"
	"github.com/factline/factline/bus/bustest"
)

// Every direct get of a bus shares one reply subscription: loads running
// at once must each get their own run's answers and nobody else's.
func TestConcurrentLoadsGetTheirOwnAnswers(t *testing.T) {
	ctx := testCtx(t)
	b, _ := bustest.Start(t)
	const runs, facts = 20, 40
	expect := make([]bus.Expect, runs)
	for pos := uint64(1); pos <= facts; pos++ {
		for r := range runs {
			recs, err := b.Append(ctx, expect[r], bus.Pending{Fact: bustest.Claim(t, "s", fmt.Sprintf("r%d", r), pos)})
			if err != nil {
				t.Fatal(err)
			}
			expect[r] = expect[r].Then(recs[0].Seq)
		}
	}
	var wg sync.WaitGroup
	errs := make(chan error, runs*5)
	for r := range runs {
		for range 5 {
			wg.Go(func() {
				run := fmt.Sprintf("r%d", r)
				log, err := b.LoadRun(ctx, "s", run)
				if err != nil {
					errs <- err
					return
				}
				if len(log.Records) != facts {
					errs <- fmt.Errorf("%s: %d facts, want %d", run, len(log.Records), facts)
					return
				}
				for i, rec := range log.Records {
					if rec.Fact.Run != run || rec.Fact.Position != uint64(i+1) {
						errs <- fmt.Errorf("%s: fact %d is %s at position %d", run, i, rec.Fact.Run, rec.Fact.Position)
						return
					}
				}
			})
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}
