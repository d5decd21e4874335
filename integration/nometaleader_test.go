package integration

import (
	"context"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// An operator who brought a brand-new three-node cluster up with nodes
// missing got from factline setup only "look up stream FACTS: context
// deadline exceeded", or "… 503 … JetStream system temporarily
// unavailable": nothing said that the cluster's JetStream had no meta
// leader, nor what to do. A setup on one node of three, the others not
// started, must fail (there is no leader to make the streams) and say so:
// which cluster and node it asked, the servers it knows, and to start the
// nodes that are down and check their routes. It is run twice: a node
// fresh from its start answers nothing while it waits for its routes, and
// 503 once it waits for an election; each answer must be explained.
func TestSetupOnAClusterWithoutAMetaLeaderSaysSo(t *testing.T) {
	bin := factlineBinary(t) // before the node starts: the first setup meets it fresh
	c := newNatsCluster(t, "")
	n1 := c.nodes[0]
	if err := c.start(n1); err != nil {
		t.Fatal(err)
	}
	for try := range 2 {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		start := time.Now()
		out, err := exec.CommandContext(ctx, bin, "setup", "--nats", c.url(), "--replicas", "3").CombinedOutput()
		killed := ctx.Err() != nil
		cancel()
		if killed {
			t.Fatalf("setup %d was still running after 2 minutes:\n%s", try+1, out)
		}
		if err == nil {
			t.Fatalf("setup %d succeeded on a cluster with one node of three up:\n%s", try+1, out)
		}
		wants := []string{
			`cluster "factline-chaos" has no JetStream meta leader yet`,
			fmt.Sprintf("node n1 at nats://127.0.0.1:%d", n1.client),
			"start the nodes that are down",
			"check that each node's cluster routes reach the others",
			"docs/operations.md#a-cluster-without-a-meta-leader",
		}
		for _, a := range c.addrs() {
			wants = append(wants, a)
		}
		for _, want := range wants {
			if !strings.Contains(string(out), want) {
				t.Errorf("setup %d (failed after %s) does not say %q:\n%s", try+1, time.Since(start).Round(time.Millisecond), want, out)
			}
		}
		t.Logf("setup %d failed after %s:\n%s", try+1, time.Since(start).Round(time.Millisecond), out)
	}
}
