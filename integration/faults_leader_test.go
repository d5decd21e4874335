package integration

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/factline/factline/bus"
	"github.com/factline/factline/events"
	"github.com/nats-io/nats-server/v2/server"
)

// Kill the node that leads the FACTS stream of a three-node cluster while
// the fault suite runs, with every service connected to the whole cluster:
// the services ride out the election and the suite ends as it would have
// on a healthy cluster.
func TestFaultLoseTheStreamLeader(t *testing.T) {
	want := faultFree(t)
	b, nodes := startCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	theSink().reset(nil)
	var urls []string
	for _, n := range nodes {
		urls = append(urls, n.ClientURL())
	}
	connect := func() *bus.Bus {
		nb, err := bus.Dial(ctx, strings.Join(urls, ","), bus.Config{Replicas: 3})
		if err != nil {
			t.Fatalf("connect to the cluster: %v", err)
		}
		t.Cleanup(nb.Conn().Close)
		return nb
	}
	startFleetIn(t, ctx, fleetSpec{copies: 1, ackWait: 5 * time.Second, connect: connect})
	ended := make(chan struct{}, 1024)
	watchFacts(t, b.Conn(), "demo", func(f events.Fact) {
		if f.Kind() == events.KindRunEnded {
			ended <- struct{}{}
		}
	})
	submitSuite(t, ctx, b, writeFaultSuite(t, faultTrials))
	for range 6 {
		select {
		case <-ended:
		case <-ctx.Done():
			t.Fatal("no runs ended before the fault")
		}
	}
	info, err := b.JetStream().Stream(ctx, bus.FactsStream)
	if err != nil {
		t.Fatal(err)
	}
	leader := info.CachedInfo().Cluster.Leader
	killed := false
	for _, n := range nodes {
		if n.Server().Name() == leader {
			n.Shutdown()
			killed = true
		}
	}
	if !killed {
		t.Fatalf("no node named %q leads FACTS", leader)
	}
	t.Logf("killed %s, the FACTS leader, after 6 runs ended", leader)
	checkOutcome(t, awaitReported(t, ctx, b, "demo", func() string { return replicaStates(nodes) }), want)
}

// replicaStates says what each running node holds of FACTS, so that a
// failure shows whether a replica lags the leader.
func replicaStates(nodes []*bus.Embedded) string {
	var sb strings.Builder
	for _, n := range nodes {
		if !n.Server().Running() {
			fmt.Fprintf(&sb, "%s: down\n", n.Server().Name())
			continue
		}
		jsz, err := n.Server().Jsz(&server.JSzOptions{Accounts: true, Streams: true})
		if err != nil {
			fmt.Fprintf(&sb, "%s: %v\n", n.Server().Name(), err)
			continue
		}
		for _, a := range jsz.AccountDetails {
			for _, st := range a.Streams {
				if st.Name != bus.FactsStream {
					continue
				}
				leader := ""
				if st.Cluster != nil {
					leader = st.Cluster.Leader
				}
				fmt.Fprintf(&sb, "%s: FACTS first %d last %d msgs %d (leader %s)\n", n.Server().Name(), st.State.FirstSeq, st.State.LastSeq, st.State.Msgs, leader)
			}
		}
	}
	return sb.String()
}
