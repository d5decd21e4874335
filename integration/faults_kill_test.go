package integration

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/factline/factline/bus"
	"github.com/factline/factline/events"
)

// faultAckWait is the ack wait of the service processes in the kill tests:
// how long a dead process's deliveries wait before another takes them.
const faultAckWait = "2s"

// Two runner processes drive the suite while runners are SIGKILLed at
// random facts they commit, and every time a runner has an external effect
// in flight: the sink kills the runner that sent the POST after applying
// it and before answering, so the effect happened but its dispatch is not
// settled. Each killed runner is started again; another runner takes its
// runs over, looks the effect up instead of sending it again, and every run
// ends as it would have without a crash.
func TestFaultRunnerKills(t *testing.T) {
	want := faultFree(t)
	srv := startServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	startFleetIn(t, ctx, fleetSpec{copies: 1, ackWait: 2 * time.Second, connect: connector(t, srv, bus.Config{}), noRunner: true})
	runners := []*proc{
		startProc(t, "serve", "--services", "runner", "--nats", srv.ClientURL(), "--instances", "2", "--ack-wait", faultAckWait, "--max-deliver", faultMaxDeliver, "--work-dir", t.TempDir()),
		startProc(t, "serve", "--services", "runner", "--nats", srv.ClientURL(), "--instances", "2", "--ack-wait", faultAckWait, "--max-deliver", faultMaxDeliver, "--work-dir", t.TempDir()),
	}
	seed := uint64(time.Now().UnixNano())
	if env := os.Getenv("FACTLINE_FAULT_SEED"); env != "" {
		var err error
		if seed, err = strconv.ParseUint(env, 10, 64); err != nil {
			t.Fatalf("FACTLINE_FAULT_SEED: %v", err)
		}
	}
	t.Logf("kill schedule seed %d (replay with FACTLINE_FAULT_SEED=%d)", seed, seed)
	k := &runnerKiller{runners: runners, rng: rand.New(rand.NewPCG(seed, 0)), owner: map[string]string{},
		held: map[string]map[string]bool{}, hits: map[string]int{}, max: 8}
	theSink().reset(k.onEffect)
	b := connector(t, srv, bus.Config{})()
	watchFacts(t, b.Conn(), "demo", k.onFact)
	submitSuite(t, ctx, b, writeFaultSuite(t, faultTrials))
	got := awaitReported(t, ctx, b, "demo", k.summary)
	theSink().reset(nil)
	checkOutcome(t, got, want)
	random, inFlight := k.counts()
	t.Logf("%d runners killed at random facts, %d with an effect in flight", random, inFlight)
	if random < 2 || inFlight < 1 {
		t.Fatalf("too few faults to prove anything: %d random kills, %d with an effect in flight", random, inFlight)
	}
	claims := 0
	for _, f := range got.facts {
		if c, ok := f.Body.(events.RunClaimed); ok && c.Lease > 1 {
			claims++
		}
	}
	if claims == 0 {
		t.Fatal("no run was taken over by another runner")
	}
}

// runnerKiller decides which runner process dies when.
type runnerKiller struct {
	runners []*proc
	rng     *rand.Rand
	max     int

	mu       sync.Mutex
	owner    map[string]string          // run → instance of its latest claim
	held     map[string]map[string]bool // instance → runs it holds, not ended
	hits     map[string]int             // run → kills of a runner holding it
	random   int
	inFlight int
	last     time.Time
}

// maxHitsPerRun bounds how often one run loses a runner that holds it. A
// run.requested delivered more than the runner's --max-deliver times
// without an answer is a poison message by design and is dead-lettered;
// the test proves recovery within that bound, not beyond it.
const maxHitsPerRun = 2

// faultMaxDeliver is the runner processes' --max-deliver here, above the
// default 5: a kill also costs a delivery to each run the killed process
// had taken but not yet claimed (buffered, or still preparing), which the
// killer cannot see, and on a loaded machine an ack wait may run out
// before a heartbeat. The poison bound itself is TestRunnerGivesUpOnA-
// PoisonRequest's to prove.
const faultMaxDeliver = "10"

// track follows which runner holds which run.
func (k *runnerKiller) track(f events.Fact) {
	switch f.Body.(type) {
	case events.RunClaimed:
		if prev := k.owner[f.Run]; prev != "" {
			delete(k.held[prev], f.Run)
		}
		k.owner[f.Run] = f.Producer.Instance
		if k.held[f.Producer.Instance] == nil {
			k.held[f.Producer.Instance] = map[string]bool{}
		}
		k.held[f.Producer.Instance][f.Run] = true
	case events.RunEnded:
		delete(k.held[k.owner[f.Run]], f.Run)
	}
}

// mayKill reports whether killing instance keeps every run it holds within
// maxHitsPerRun, and if so counts the hits.
func (k *runnerKiller) mayKill(instance string) bool {
	for run := range k.held[instance] {
		if k.hits[run] >= maxHitsPerRun {
			return false
		}
	}
	for run := range k.held[instance] {
		k.hits[run]++
	}
	return true
}

// onFact kills, now and then, the runner that committed the fact.
func (k *runnerKiller) onFact(f events.Fact) {
	if f.Producer.Service != events.OwnerRunner {
		return
	}
	k.mu.Lock()
	k.track(f)
	kill := k.random < k.max && time.Since(k.last) > time.Second && k.rng.IntN(15) == 0 && k.mayKill(f.Producer.Instance)
	if kill {
		k.random++
		k.last = time.Now()
	}
	k.mu.Unlock()
	if kill {
		k.crash(f.Producer.Instance)
	}
}

// onEffect runs in the sink, after the effect was applied and before the
// runner hears of it: the first few times, the runner that sent it dies.
func (k *runnerKiller) onEffect(operation string) {
	run, _, _ := strings.Cut(operation, "/")
	k.mu.Lock()
	owner := k.owner[run]
	kill := k.inFlight < 3 && owner != "" && k.mayKill(owner)
	if kill {
		k.inFlight++
	}
	k.mu.Unlock()
	if kill {
		k.crash(owner)
	}
}

// crash SIGKILLs the runner process behind an instance name and starts it
// again a little later, as a supervisor would.
func (k *runnerKiller) crash(instance string) {
	pid := instancePID(instance)
	for _, p := range k.runners {
		if p.pid() == pid && pid != 0 {
			p.crash()
			go func() { time.Sleep(300 * time.Millisecond); p.start() }()
			return
		}
	}
}

func (k *runnerKiller) counts() (random, inFlight int) {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.random, k.inFlight
}

func (k *runnerKiller) summary() string {
	r, i := k.counts()
	return fmt.Sprintf("\n%d random kills, %d with an effect in flight\n", r, i)
}

// The stall handler, the decider, the grader and the meter each run as a
// process of their own and are each SIGKILLed once mid-suite and started
// again: their unacknowledged deliveries come back to the restarted
// process, which finds what was already committed and adds nothing twice.
func TestFaultServiceKills(t *testing.T) {
	want := faultFree(t)
	srv := startServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	theSink().reset(nil)
	url := srv.ClientURL()
	services := map[string]*proc{}
	for _, s := range []string{"staller", "decider", "grader", "meter"} {
		services[s] = startProc(t, "serve", "--services", s, "--nats", url, "--ack-wait", faultAckWait)
	}
	startProc(t, "serve", "--services", "runner", "--nats", url, "--instances", "4", "--ack-wait", faultAckWait, "--work-dir", t.TempDir())

	// Kill each service at a point of the suite where it has work: after
	// so many facts of the kind it consumes have been committed.
	type fault struct {
		service string
		kind    events.Kind
		after   int
	}
	plan := []fault{
		{"staller", events.KindTurnCompleted, 10},
		{"decider", events.KindStallObserved, 30},
		{"grader", events.KindRunEnded, 8},
		{"meter", events.KindRunEnded, 20},
	}
	var mu sync.Mutex
	seen := map[events.Kind]int{}
	var killed []string
	var restarts sync.WaitGroup
	b := connector(t, srv, bus.Config{})()
	watchFacts(t, b.Conn(), "demo", func(f events.Fact) {
		mu.Lock()
		defer mu.Unlock()
		seen[f.Kind()]++
		for _, p := range plan {
			if f.Kind() == p.kind && seen[p.kind] == p.after {
				killed = append(killed, p.service)
				services[p.service].crash()
				restarts.Go(func() { time.Sleep(time.Second); services[p.service].start() })
			}
		}
	})
	submitSuite(t, ctx, b, writeFaultSuite(t, faultTrials))
	got := awaitReported(t, ctx, b, "demo", func() string { mu.Lock(); defer mu.Unlock(); return fmt.Sprintf("killed %v\n", killed) })
	restarts.Wait()
	checkOutcome(t, got, want)
	mu.Lock()
	defer mu.Unlock()
	if len(killed) != len(plan) {
		t.Fatalf("killed %v, planned %d kills", killed, len(plan))
	}
}
