package sandboxtest

import (
	"testing"

	"github.com/factline/factline/events"
)

// NeedActive returns when f, a containment feature a test asked for (at
// the limit asked, for a resource limit), is active. A test of what the
// feature contains never passes without it: when the probe left it
// unsupported the test is skipped, saying why, only if the host provably
// cannot give it (HostLacks: a look at the kernel apart from the probe),
// and fails otherwise, since then the probe lost a feature this host has.
func NeedActive(tb testing.TB, f events.ContainmentFeature, asked uint64) {
	tb.Helper()
	if f.State == events.ContainmentActive {
		return
	}
	if why, lacks := HostLacks(f.Name, asked); lacks {
		tb.Skipf("%s is %s (%s), and this host cannot give it: %s", f.Name, f.State, f.Detail, why)
	}
	tb.Fatalf("%s is %s (%s), yet this host can give it: the probe lost a feature, and a containment test without it proves nothing", f.Name, f.State, f.Detail)
}
