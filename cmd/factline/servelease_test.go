package main

import (
	"strings"
	"testing"
)

// A --model-slot-lease under a second is refused as the mistake in the
// call it is, before anything connects, as --ack-wait is. A negative one
// was taken for the default without a word, and one under a second was
// refused only after connecting, exit 1, by the runner's option name
// (WithModelSlotLease) instead of the flag's.
func TestServeRefusesAModelSlotLeaseUnderASecond(t *testing.T) {
	t.Parallel()
	for _, lease := range []string{"-5s", "500ms"} {
		args := []string{"serve", "--services", "runner", "--model-slot-lease", lease, "--nats", "nats://127.0.0.1:1"}
		code, _, errOut := runCLI(t, args...)
		if code != 2 || !strings.Contains(errOut, "--model-slot-lease "+lease) || !strings.Contains(errOut, "at least 1s") {
			t.Errorf("factline %v: exit %d, stderr %q; want exit 2 naming the flag and its 1s minimum", args, code, errOut)
		}
	}
	// A second is enough: the command gets as far as connecting.
	code, _, errOut := runCLI(t, "serve", "--services", "runner", "--model-slot-lease", "1s", "--nats", "nats://127.0.0.1:1")
	if code == 2 || strings.Contains(errOut, "--model-slot-lease") {
		t.Errorf("serve --model-slot-lease 1s: exit %d, stderr %q; want it accepted", code, errOut)
	}
}

// A service named twice in --services is a mistake in the call, found
// before connecting; it was exit 1 from the fleet ("fleet: service runner
// is named twice") once the store was open.
func TestServeRefusesAServiceNamedTwice(t *testing.T) {
	t.Parallel()
	code, _, errOut := runCLI(t, "serve", "--services", "runner,grader,runner", "--nats", "nats://127.0.0.1:1")
	if code != 2 || !strings.Contains(errOut, `--services: "runner" is named twice`) {
		t.Errorf("serve --services runner,grader,runner: exit %d, stderr %q; want exit 2 naming the service", code, errOut)
	}
}
