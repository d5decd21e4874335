package kit

import "github.com/factline/factline/events"

// TurnWorkers is how many runs' turns a per-turn service (TurnSpec)
// handles at once unless WithWorkers says otherwise. Each run's turns
// are handled one at a time and in order (Spec.OrderByRun), so the
// workers only ever work on different runs; their time goes mostly to
// waiting for loads, appends (and the decider's judges), which is why
// there are more than the machine's cores.
const TurnWorkers = 16

// TurnSpec is the Spec of a service that answers every completed turn of
// a run once, from the run's folded facts and its case: the staller and
// the decider. It consumes one kind, names its instances <host>-<pid> (no
// role in front, unlike the grader's and the meter's), keeps 1024 runs
// loaded and 256 decoded cases, and handles up to TurnWorkers runs at
// once, each run's turns in order. A delivery is tried maxDeliver times
// (0: the bus's default).
func TurnSpec(owner events.Owner, consumer string, kind events.Kind, maxDeliver int) Spec {
	return Spec{
		Owner:       owner,
		Consumer:    consumer,
		Filters:     []string{events.KindFilter(kind)},
		RunCache:    1024,
		PolicyCache: 256,
		MaxDeliver:  maxDeliver,
		Workers:     TurnWorkers,
		OrderByRun:  true,
	}
}
