package tools

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A command the run's wall-time budget stops (the call's context ends
// before the command's own timeout) says so; it once said "timed out
// after 1m0s" of a command that ran a second. A command whose call comes
// after the budget ran out is not started, and says that.
func TestACommandStoppedByTheRunsBudgetSaysSo(t *testing.T) {
	env, dir := testEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	res := Exec(ctx, env, "echo started; sleep 30", time.Minute, 1<<10)
	if res.Err == nil || res.Err.Code != CodeTimeout {
		t.Fatalf("got %+v, want %s", res, CodeTimeout)
	}
	if msg := res.Err.Message; !strings.Contains(msg, "wall-time budget") || strings.Contains(msg, "timed out after 1m0s") {
		t.Errorf("the message %q does not say the run's budget stopped it", msg)
	}
	if !strings.Contains(res.Output, "started") {
		t.Errorf("the output before the stop is lost: %q", res.Output)
	}

	<-ctx.Done()
	res = Exec(ctx, env, "touch ran", time.Minute, 1<<10)
	if res.Err == nil || res.Err.Code != CodeTimeout || !strings.Contains(res.Err.Message, "not started") {
		t.Fatalf("a command after the budget: %+v (err %+v), want %s, not started", res, res.Err, CodeTimeout)
	}
	if _, err := os.Stat(filepath.Join(dir, "ran")); err == nil {
		t.Error("the command ran after the budget")
	}
}
