package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/factline/factline/internal/testutil"
)

// --approval-timeout sets how long the runner waits for a person's
// approval (1h by default, once settable only from Go): a local run whose
// call nobody approves goes on after it, the call rejected, saying so.
func TestApprovalTimeoutFlagBoundsTheWait(t *testing.T) {
	t.Parallel()
	suite := approvalSuite(t, "waits", "Not paid.")
	store := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var out, errOut testutil.LogBuffer
	if code := run(ctx, []string{"run", suite, "--store", store, "--fsync", "interval", "--approval-timeout", "2s"}, &out, &errOut); code != 0 {
		t.Fatalf("run exited %d:\n%s%s", code, out.String(), errOut.String())
	}
	code, facts, errText := runCLI(t, "tail", "--store", store, "--since", "start", "--no-follow", "--json")
	if code != 0 {
		t.Fatalf("tail: %d %s", code, errText)
	}
	if !strings.Contains(facts, "no approval within 2s") || !strings.Contains(facts, "APPROVAL_REJECTED") {
		t.Fatalf("the call was not rejected after 2s without approval:\n%.3000s", facts)
	}
}

// --approval-timeout is a positive duration: 0, which the flag would read
// as its default, and a negative one are refused before anything starts.
func TestApprovalTimeoutFlagIsPositive(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{
		{"serve", "--services", "runner", "--approval-timeout", "0s"},
		{"run", "suite.yaml", "--approval-timeout", "0"},
		{"serve", "--services", "runner", "--approval-timeout", "-5m"},
		{"run", "suite.yaml", "--approval-timeout", "-1s"},
	} {
		args = append(args, "--nats", "nats://127.0.0.1:1")
		code, _, errOut := runCLI(t, args...)
		if code != 2 || !strings.Contains(errOut, "--approval-timeout") || !strings.Contains(errOut, "must be") {
			t.Errorf("factline %v: exit %d, stderr %q; want exit 2 naming --approval-timeout", args, code, errOut)
		}
	}
}
