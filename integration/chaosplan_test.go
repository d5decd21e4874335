package integration

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/factline/factline/events"
)

// A chaos schedule is a pure function of its seed: which faults, placed at
// which moments of the fault suite, for how long. The moments are events
// of the suite, not times, so that a seed replays the same schedule
// whatever the machine's speed (the interleavings of threads are the
// machine's; the schedule is not).

// chaosAckWait is every service process's --ack-wait in the campaign: a
// partitioned runner's runs are taken over after it, so a partition lasts
// longer.
const chaosAckWait = 5 * time.Second

// chaosReplyBound is how long a service waits for one answer from the
// cluster (an append's acknowledgement among them) before it gives up on
// it: bus's replyTimeout. A partition right after an intent that heals
// within it lets the partitioned runner hear its append acknowledged
// after another runner took the run over: the moment an effect may be
// sent twice.
const chaosReplyBound = 10 * time.Second

// moment is when a fault strikes.
type moment struct {
	// published: the moment a runner process's publish of the nth
	// distinct run's fact of this kind reaches the cluster, seen by the
	// runner's proxy; the fault strikes the runner that published it.
	// Otherwise the moment the nth fact of this kind is in the log, seen
	// by the test's reader; a runner fault then strikes the runner that
	// committed it.
	published bool
	kind      events.Kind
	notify    bool // only facts of the notify case's runs (its external effect)
	nth       int
}

func (m moment) String() string {
	of := ""
	if m.notify {
		of = " of a notify run"
	}
	if m.published {
		return fmt.Sprintf("when the %s run's %s%s is published", ordinal(m.nth), m.kind, of)
	}
	return fmt.Sprintf("once the %s %s%s is in the log", ordinal(m.nth), m.kind, of)
}

func ordinal(n int) string {
	suffix := "th"
	switch {
	case n%100 >= 11 && n%100 <= 13:
	case n%10 == 1:
		suffix = "st"
	case n%10 == 2:
		suffix = "nd"
	case n%10 == 3:
		suffix = "rd"
	}
	return fmt.Sprintf("%d%s", n, suffix)
}

// faultKind is what a fault does.
type faultKind string

const (
	killRunner faultKind = "kill-runner" // SIGKILL the runner process, start it again after pause
	holdRunner faultKind = "hold-runner" // its proxies pass no byte either way for dur, connections kept
	dropRunner faultKind = "drop-runner" // its proxies close every connection and refuse new ones for dur
	killNode   faultKind = "kill-node"   // SIGKILL a cluster node, start it again after pause
	termNode   faultKind = "term-node"   // SIGTERM a cluster node, start it again after pause
	rolling    faultKind = "rolling"     // every node in turn: SIGTERM, start after pause, wait until healthy
	fullStore  faultKind = "full-store"  // other data fills the cluster's store for dur, then is removed
)

// runnerFault reports whether the fault strikes one runner process.
func (k faultKind) runnerFault() bool { return k == killRunner || k == holdRunner || k == dropRunner }

// fault is one entry of a schedule.
type fault struct {
	at   moment
	kind faultKind
	// before: a partition placed at a publish cuts the runner off before
	// the server has the message; otherwise right after it passed, so
	// that the server stores it and its acknowledgement is what is lost.
	before bool
	node   int           // the node of kill-node and term-node (0, 1, 2)
	pause  time.Duration // down time of a process or node before its restart
	dur    time.Duration // length of a partition or of a full store
}

func (f fault) String() string {
	var what string
	switch f.kind {
	case killRunner:
		what = fmt.Sprintf("SIGKILL that runner process, restart it after %v", f.pause)
	case holdRunner, dropRunner:
		how := "hold every byte of that runner process both ways"
		if f.kind == dropRunner {
			how = "drop every connection of that runner process and refuse new ones"
		}
		where := ""
		if f.at.published {
			where = " right after the message passed"
			if f.before {
				where = " before the message passes"
			}
		}
		what = fmt.Sprintf("%s%s, for %v", how, where, f.dur)
	case killNode, termNode:
		sig := "SIGKILL"
		if f.kind == termNode {
			sig = "SIGTERM"
		}
		what = fmt.Sprintf("%s node n%d, restart it after %v", sig, f.node+1, f.pause)
	case rolling:
		what = fmt.Sprintf("rolling restart of n1, n2, n3 (SIGTERM, restart after %v, next once healthy)", f.pause)
	case fullStore:
		what = fmt.Sprintf("fill the cluster's store with other data for %v, then remove it", f.dur)
	}
	return fmt.Sprintf("%s: %s", f.at, what)
}

// The fault suite's shape, which the moments must stay within: the demo's
// cases and notify under two treatments (36 runs), 4 of them of the notify
// case, each with one external effect. A moment beyond what the suite has
// would never come: a seed checks its schedule against the fault-free
// suite before it starts, and fails when a scheduled fault never struck.
const (
	notifyRuns   = 2 * faultTrials
	suiteSealed  = 24 // fewer than the candidates the fault-free suite seals
	suiteTurns   = 40 // fewer than its completed turns
	clusterFirst = 2  // cluster faults come once this many runs ended …
	clusterLast  = 20 // … and no later than this
)

// chaosSchedule is the schedule of a seed. Every schedule partitions a
// runner right after it published a notify run's intent (the moment an
// effect is intended and not yet sent), places one more partition during
// a settle or a seal, kills a runner, and breaks the cluster once (a node
// killed or stopped, a rolling restart, or a full store); then up to two
// more faults of any kind.
func chaosSchedule(seed uint64) []fault {
	rng := rand.New(rand.NewPCG(seed, 0x5eed_c4a05))
	between := func(lo, hi time.Duration) time.Duration {
		return lo + time.Duration(rng.Int64N(int64(hi-lo)+1)).Round(100*time.Millisecond)
	}
	partition := func() time.Duration { return between(chaosAckWait*3/2, chaosAckWait*5/2) }
	pause := func() time.Duration { return between(300*time.Millisecond, 2*time.Second) }
	used := map[moment]bool{}
	// pick draws a moment not used yet (two faults at one moment would
	// make their order a race).
	pick := func(published bool, kind events.Kind, notify bool, lo, hi int) moment {
		for {
			m := moment{published: published, kind: kind, notify: notify, nth: lo + rng.IntN(hi-lo+1)}
			if !used[m] {
				used[m] = true
				return m
			}
		}
	}
	partitionKind := func() faultKind {
		if rng.IntN(3) == 0 {
			return dropRunner
		}
		return holdRunner
	}
	intent := func() fault {
		// Mostly healed within the reply bound (the acknowledgement
		// arrives late), sometimes beyond it (it is given up on).
		dur := between(chaosAckWait*7/5, chaosReplyBound*19/20)
		if rng.IntN(3) == 0 {
			dur = between(chaosReplyBound*21/20, chaosReplyBound*5/4)
		}
		return fault{at: pick(true, events.KindDispatchIntended, true, 1, notifyRuns), kind: partitionKind(), dur: dur}
	}
	settleOrSeal := func() fault {
		f := fault{kind: partitionKind(), before: rng.IntN(2) == 0, dur: partition()}
		if rng.IntN(2) == 0 {
			f.at = pick(true, events.KindDispatchComplete, true, 1, notifyRuns)
		} else {
			f.at = pick(true, events.KindCandidateSealed, false, 1, suiteSealed)
		}
		return f
	}
	kill := func() fault {
		return fault{at: pick(false, events.KindTurnCompleted, false, 1, suiteTurns), kind: killRunner, pause: pause()}
	}
	cluster := func() fault {
		f := fault{at: pick(false, events.KindRunEnded, false, clusterFirst, clusterLast), pause: pause()}
		switch rng.IntN(4) {
		case 0:
			f.kind, f.node = killNode, rng.IntN(3)
		case 1:
			f.kind, f.node = termNode, rng.IntN(3)
		case 2:
			f.kind = rolling
		default:
			f.kind, f.dur = fullStore, between(2*time.Second, 8*time.Second)
		}
		return f
	}
	out := []fault{intent(), settleOrSeal(), kill(), cluster()}
	for range rng.IntN(3) {
		switch rng.IntN(4) {
		case 0:
			out = append(out, intent())
		case 1:
			out = append(out, settleOrSeal())
		case 2:
			out = append(out, kill())
		default:
			out = append(out, cluster())
		}
	}
	return out
}

// scheduleText is a schedule as the campaign prints it.
func scheduleText(seed uint64, s []fault) string {
	var b strings.Builder
	fmt.Fprintf(&b, "chaos seed %d (replay: make chaos SEED=%d), %d faults:\n", seed, seed, len(s))
	for i, f := range s {
		fmt.Fprintf(&b, "  %d. %s\n", i+1, f)
	}
	return b.String()
}

// A schedule is a pure function of its seed, and seeds differ.
func TestChaosScheduleIsAFunctionOfItsSeed(t *testing.T) {
	t.Parallel()
	for seed := range uint64(50) {
		a, b := scheduleText(seed, chaosSchedule(seed)), scheduleText(seed, chaosSchedule(seed))
		if a != b {
			t.Fatalf("seed %d gave two schedules:\n%s\n%s", seed, a, b)
		}
	}
	if chaosSchedule(1)[0] == chaosSchedule(2)[0] && chaosSchedule(1)[1] == chaosSchedule(2)[1] && chaosSchedule(1)[2] == chaosSchedule(2)[2] {
		t.Fatal("seeds 1 and 2 begin with the same faults")
	}
}

// Every schedule has the must-show faults, stays within the suite's
// shape, and partitions for longer than the ack wait; over a few dozen
// seeds every kind of fault and every moment kind comes up.
func TestChaosSchedulesCoverEveryFault(t *testing.T) {
	t.Parallel()
	kinds := map[faultKind]int{}
	moments := map[events.Kind]int{}
	for seed := range uint64(60) {
		s := chaosSchedule(seed)
		if len(s) < 4 || len(s) > 6 {
			t.Fatalf("seed %d: %d faults", seed, len(s))
		}
		first := s[0]
		if !first.at.published || first.at.kind != events.KindDispatchIntended || !first.at.notify || !first.kind.runnerFault() || first.before {
			t.Fatalf("seed %d does not begin with a partition right after a notify intent: %s", seed, first)
		}
		seen := map[moment]bool{}
		for _, f := range s {
			kinds[f.kind]++
			moments[f.at.kind]++
			if seen[f.at] {
				t.Fatalf("seed %d: two faults at %s", seed, f.at)
			}
			seen[f.at] = true
			limit := map[events.Kind]int{events.KindDispatchIntended: notifyRuns, events.KindDispatchComplete: notifyRuns,
				events.KindCandidateSealed: suiteSealed, events.KindTurnCompleted: suiteTurns, events.KindRunEnded: clusterLast}[f.at.kind]
			if f.at.nth < 1 || f.at.nth > limit {
				t.Fatalf("seed %d: %s is beyond the suite", seed, f)
			}
			if (f.kind == holdRunner || f.kind == dropRunner) && f.dur <= chaosAckWait {
				t.Fatalf("seed %d: %s does not outlast the ack wait %v", seed, f, chaosAckWait)
			}
		}
	}
	for _, k := range []faultKind{killRunner, holdRunner, dropRunner, killNode, termNode, rolling, fullStore} {
		if kinds[k] == 0 {
			t.Errorf("no schedule of 60 seeds has a %s", k)
		}
	}
	for _, k := range []events.Kind{events.KindDispatchIntended, events.KindDispatchComplete, events.KindCandidateSealed, events.KindTurnCompleted, events.KindRunEnded} {
		if moments[k] == 0 {
			t.Errorf("no schedule of 60 seeds strikes at a %s", k)
		}
	}
}
