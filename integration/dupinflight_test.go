package integration

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/factline/factline/bus"
	"github.com/factline/factline/bus/bustest"
)

// Two instances of one service that take two facts of one run at once (a
// second grader, one given the run's candidate.sealed and the other its
// run.ended) commit the same derived fact under the same message ID. On a
// cluster the second publish can reach the stream leader while the first
// is still being replicated, and JetStream answers it "duplicate message
// id is in process" (409, error 10158), not as a duplicate. That is
// contention, as a wrong last sequence is: the commit reloads and finds
// the fact. Before, the handler failed with the server's error, spending
// one of the message's deliveries on it and logging "handler failed;
// redelivering" (70 such lines and as many redeliveries when a second
// grader joined a 320-run suite on a three-node cluster).
func TestTwoWritersOfOneFactOnTheClusterBothCommitIt(t *testing.T) {
	b1, nodes := startCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	// The second writer through another node, as another process would be.
	b2, err := bus.Dial(ctx, nodes[1].ClientURL(), bus.Config{Replicas: 3})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b2.Conn().Close)

	writers := []*bus.Bus{b1, b2}
	for round := range 60 {
		run := fmt.Sprintf("r%d", round)
		p := bus.Pending{Fact: bustest.Claim(t, "s", run, 1), MsgID: run + "/graded"}
		decide := func(bus.RunLog) ([]bus.Pending, error) { return []bus.Pending{p}, nil }
		errs := make([]error, len(writers))
		start := make(chan struct{})
		var wg sync.WaitGroup
		for w, b := range writers {
			wg.Go(func() {
				<-start
				_, errs[w] = b.Commit(ctx, nil, "s", run, decide)
			})
		}
		close(start)
		wg.Wait()
		for w, err := range errs {
			if err != nil {
				t.Fatalf("round %d: writer %d of the same fact failed: %v; want both to find it committed", round, w+1, err)
			}
		}
		log, err := b1.LoadRun(ctx, "s", run)
		if err != nil {
			t.Fatal(err)
		}
		if len(log.Records) != 1 {
			t.Fatalf("round %d: the run holds %d facts after two writers of one, want 1", round, len(log.Records))
		}
	}
}
