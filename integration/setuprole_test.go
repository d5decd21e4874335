package integration

import (
	"context"
	"errors"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// 'factline setup' makes and changes a tenant's streams and buckets, which
// only its admin role may do. Run as another role of the account
// (tenants.conf), on an account nobody set up or on one its admin set up,
// it must fail (exit 1, docs/cli.md) naming what it may not do: it
// exited 0 on a set-up account, having changed nothing, and the operator
// took the account for set up as asked (a --replicas or --compress it was
// given never applied).
func TestSetupAsARoleThatMayNotManageStreamsFails(t *testing.T) {
	t.Parallel()
	bin := factlineBinary(t)
	ctx := ctxFor(t, 2*time.Minute)
	_, url := roleServer(t, "tenants.conf")
	setup := func(user, prefix, role string) (int, string) {
		t.Helper()
		cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		out, err := exec.CommandContext(cctx, bin, "setup", "--nats", url, "--user", user, "--password-file", writePasswordFile(t, prefix, role)).CombinedOutput()
		var exit *exec.ExitError
		switch {
		case cctx.Err() != nil:
			t.Fatalf("setup as %s did not end: %s", user, out)
		case err == nil:
			return 0, string(out)
		case errors.As(err, &exit):
			return exit.ExitCode(), string(out)
		}
		t.Fatalf("setup as %s: %v", user, err)
		return 0, ""
	}
	refused := func(user, prefix, role, when string) {
		t.Helper()
		code, out := setup(user, prefix, role)
		if code != 1 || !strings.Contains(out, "permission denied") || !strings.Contains(out, "$JS.API.STREAM.") || !strings.Contains(out, "admin") {
			t.Errorf("setup as %s %s: exit %d, want 1 naming the stream API it may not use and the admin role:\n%s", user, when, code, out)
		}
	}
	refused("a-runner", "TENANT_A", "runner", "on an account nobody set up")
	if code, out := setup("a-admin", "TENANT_A", "admin"); code != 0 {
		t.Fatalf("setup as a-admin: exit %d\n%s", code, out)
	}
	for _, role := range []string{"runner", "submitter", "ops", "analyst"} {
		refused("a-"+role, "TENANT_A", role, "on an account its admin set up")
	}
}
