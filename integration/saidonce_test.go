package integration

import (
	"bytes"
	"context"
	"errors"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// A request the server refuses for want of permission ends the command
// with one error naming it. The refusal reaches the client on the side (the
// connection's error handler), and was printed twice: a log ERROR line
// "NATS refused a request" and then the command's own error, the same
// words. Run against the shipped roles, as an operator would meet it.
func TestARefusedPermissionIsSaidOnce(t *testing.T) {
	t.Parallel()
	bin := factlineBinary(t)
	ctx := ctxFor(t, 2*time.Minute)
	_, url := roleServer(t, "factline.conf")
	as := func(role string) []string { return roleArgs(t, url, role) }
	once := func(what, want string, args ...string) {
		t.Helper()
		cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		var stdout, stderr bytes.Buffer
		cmd := exec.CommandContext(cctx, bin, args...)
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.ExitCode() != 1 || cctx.Err() != nil {
			t.Fatalf("%s: want exit 1, got %v\nstdout:\n%s\nstderr:\n%s", what, err, stdout.String(), stderr.String())
		}
		all := stdout.String() + stderr.String()
		if n := strings.Count(all, "permission denied"); n != 1 || !strings.Contains(all, want) {
			t.Errorf("%s: the refusal of %s is said %d times, want once:\nstdout:\n%s\nstderr:\n%s", what, want, n, stdout.String(), stderr.String())
		}
		if strings.Contains(all, "NATS refused a request") {
			t.Errorf("%s: the refusal is logged beside the command's error:\n%s", what, all)
		}
	}
	once("setup as the runner on an account nobody set up", `"$JS.API.STREAM.CREATE.`, append([]string{"setup"}, as("runner")...)...)
	if out, err := exec.CommandContext(ctx, bin, append([]string{"setup"}, as("admin")...)...).CombinedOutput(); err != nil {
		t.Fatalf("setup as admin: %v\n%s", err, out)
	}
	once("setup as the analyst on a set-up account", `"$JS.API.STREAM.UPDATE.`, append([]string{"setup"}, as("analyst")...)...)
	once("tail --control as the analyst", `permission denied: NATS user analyst may not`, append([]string{"tail", "--control", "--no-follow", "--since", "start"}, as("analyst")...)...)
}
