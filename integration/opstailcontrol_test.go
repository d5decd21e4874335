package integration

import (
	"github.com/factline/factline/events"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// docs/security.md and the run --nats text in docs/cli.md send an operator
// to `factline tail --control` for a fleet's live signals, and the ops role
// is the operator's. tail --control reads the CONTROL stream through an
// ordered consumer (so it can start at --since and stop at the end), which
// the shipped ops role was not granted: it was refused "permission denied".
// Run against the shipped roles, as an operator would meet it.
func TestTheOpsRoleTailsControlSignals(t *testing.T) {
	t.Parallel()
	bin := factlineBinary(t)
	ctx := ctxFor(t, 2*time.Minute)
	_, url := roleServer(t, "factline.conf")
	as := func(role string) []string { return roleArgs(t, url, role) }
	run := func(args ...string) string {
		t.Helper()
		out, err := exec.CommandContext(ctx, bin, args...).CombinedOutput()
		if err != nil {
			t.Fatalf("factline %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	run(append([]string{"setup"}, as("admin")...)...)
	ops, refused := openAs(t, ctx, url, "FACTLINE", "ops")
	if err := ops.Controls().Send(ctx, "s1", "r1", events.Control{Signal: events.SignalSteer, Instruction: "look at the tests first"}); err != nil {
		t.Fatalf("ops sends a steer: %v (refused %v)", err, refused.list())
	}
	out := run(append([]string{"tail", "--control", "--no-follow", "--since", "start"}, as("ops")...)...)
	if !strings.Contains(out, "ctl.s1.r1.steer") || !strings.Contains(out, "look at the tests first") {
		t.Errorf("tail --control as ops does not show the steer it sent:\n%s", out)
	}
}
