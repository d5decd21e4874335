package bus

import (
	"context"
	"sync"
	"time"
)

// byRunJob is one delivery handed to a worker, with the run it holds.
type byRunJob struct {
	key string
	d   delivered
}

// handleByRun runs cfg.Workers workers over the deliveries on work so
// that the deliveries of one run are handled one at a time, in the order
// they were delivered, while different runs are handled in parallel (a
// run is runKey of the subject: "fact.<suite>.<run>"). A
// delivery whose run is being handled waits here, with progress
// heartbeats like those of the pull's own queue, so that it is not
// redelivered meanwhile; at most cfg.Workers deliveries wait here, and
// beyond that the pull's queue holds the rest. free, when set, gets a
// token back each time a worker finishes (OnDemand). It returns once work
// is closed and every worker stopped; what still waited is handed back.
func (b *Bus) handleByRun(ctx context.Context, cfg ConsumerConfig, h Handler, work <-chan delivered, free chan<- struct{}) {
	jobs := make(chan byRunJob)
	finished := make(chan string)
	var wg sync.WaitGroup
	for range cfg.Workers {
		wg.Go(func() {
			for j := range jobs {
				b.handle(ctx, cfg, h, j.d)
				if free != nil {
					free <- struct{}{}
				}
				finished <- j.key
			}
		})
	}
	// behind holds, for each run a worker is handling or is about to, the
	// deliveries of that run that came after; ready are deliveries whose
	// run is free, in arrival order, not yet taken by a worker.
	behind := map[string][]delivered{}
	var ready []byRunJob
	held := 0 // deliveries in ready and behind
	beat := time.NewTicker(cfg.AckWait / 3)
	defer beat.Stop()
	in := work
	for in != nil {
		var out chan<- byRunJob
		var next byRunJob
		if len(ready) > 0 {
			out, next = jobs, ready[0]
		}
		accept := in
		if held >= cfg.Workers {
			accept = nil // the pull's queue keeps the rest, with heartbeats
		}
		select {
		case d, ok := <-accept:
			if !ok {
				in = nil
				continue
			}
			held++
			k := runKey(d.m.Subject())
			if q, busy := behind[k]; busy {
				behind[k] = append(q, d)
			} else {
				behind[k] = nil
				ready = append(ready, byRunJob{key: k, d: d})
			}
		case out <- next:
			ready = ready[1:]
			held--
		case k := <-finished:
			if q := behind[k]; len(q) > 0 {
				ready = append(ready, byRunJob{key: k, d: q[0]})
				behind[k] = q[1:]
			} else {
				delete(behind, k)
			}
		case <-beat.C:
			for _, j := range ready {
				go j.d.lease.beat(ctx, cfg.AckWait/3)
			}
			for _, q := range behind {
				for _, d := range q {
					go d.lease.beat(ctx, cfg.AckWait/3)
				}
			}
		}
	}
	// The consumer is stopping (work is closed only then, once the pull
	// loop has returned): what waited was never worked on and goes back
	// for another instance, at once.
	for _, j := range ready {
		b.handBackStopped(j.d, cfg)
	}
	for _, q := range behind {
		for _, d := range q {
			b.handBackStopped(d, cfg)
		}
	}
	close(jobs)
	go func() {
		for range finished {
		}
	}()
	wg.Wait()
	close(finished)
}
