package main

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/factline/factline/bus"
	"github.com/factline/factline/bus/bustest"
	"github.com/factline/factline/internal/testutil"
)

// Two suites submitted to one fleet share its runners: the second's runs
// wait in line behind the first's. run --nats then saw none of its own
// runs start after --claim-grace and said "no runner has taken a run …
// Start one with: factline serve --services runner", while the fleet's
// runners were serving and busy with the other suite. It must say so
// instead: that runners are taking other suites' runs (naming the newest
// it took), so this suite's wait, and that more runners go faster.
func TestRunNatsBehindAnotherSuiteSaysTheRunnersAreBusy(t *testing.T) {
	t.Parallel()
	srv := bustest.Server(t, bus.EmbeddedConfig{Listen: "127.0.0.1:-1"})
	url := srv.ClientURL()
	startServe(t, "--services", "meter", "--nats", url)
	other := bustest.OpenWith(t, srv, bus.Config{})

	out, errOut := &testutil.LogBuffer{}, &testutil.LogBuffer{}
	_, exited := startRun(t, out, errOut, tinySuite, "--nats", url, "--claim-grace", "1s")

	// The fleet's runners, busy with another suite: they claim its runs
	// one after another while this suite waits.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	claimed := make(chan struct{})
	go func() {
		defer close(claimed)
		for i := 1; ctx.Err() == nil; i++ {
			f := bustest.Claim(t, "other", fmt.Sprintf("r%d", i), 1)
			if _, err := other.Append(ctx, bus.Expect{}, bus.Pending{Fact: f}); err != nil && ctx.Err() == nil {
				t.Errorf("claim a run of the other suite: %v", err)
				return
			}
			select {
			case <-ctx.Done():
			case <-time.After(100 * time.Millisecond):
			}
		}
	}()
	defer func() { cancel(); <-claimed }()

	waitForText(t, errOut.String, "runs wait in line", exited)
	msg := errOut.String()
	for _, want := range []string{`no run of suite "tiny" has started`, "the fleet's runners are taking other suites' runs", "(the newest they took: other/r", "factline serve --services runner --nats " + url} {
		if !strings.Contains(msg, want) {
			t.Errorf("stderr %q should hold %q", msg, want)
		}
	}
	if strings.Contains(msg, "no runner has taken") {
		t.Errorf("stderr %q says no runner serves while runners take other suites' runs", msg)
	}
}
