package main

import (
	"strings"
	"testing"
)

// The command run --nats names for a missing service must start one that
// joins the fleet: on a cluster whose streams have three replicas, a serve
// without --replicas 3 is refused ("stream FACTS exists with replicas =
// 3, this command expects 1"), so the hint carries the run's --replicas.
func TestTheMissingServiceHintCarriesTheReplicas(t *testing.T) {
	const url = "nats://127.0.0.1:4222,nats://127.0.0.1:4223,nats://127.0.0.1:4224"
	for _, tc := range []struct {
		requested int
		replicas  int
		want      string
	}{
		{0, 3, "factline serve --nats " + url + " --replicas 3 "},
		{1, 3, "factline serve --services runner --nats " + url + " --replicas 3 "},
		{0, 1, "factline serve --nats " + url + " (add"},
		{1, 1, "factline serve --services runner --nats " + url + " (add"},
	} {
		var out, errOut strings.Builder
		p := newProgress(&out, &errOut)
		p.suite, p.planned, p.requested = "nightly", 2, tc.requested
		p.warnIdle(idleWatch{url: url, replicas: tc.replicas}, "")
		if got := errOut.String(); !strings.Contains(got, tc.want) {
			t.Errorf("requested %d, replicas %d: the hint %q does not hold %q", tc.requested, tc.replicas, got, tc.want)
		}
	}
}
