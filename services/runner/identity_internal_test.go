package runner

import (
	"testing"
	"time"

	"github.com/factline/factline/cases"
	"github.com/factline/factline/events"
	"github.com/factline/factline/services/runner/tools"
)

// The identity a runner claims follows what it actually runs: one tool
// contract changed (here http_call's timeout) or another containment makes
// another identity; the same runner on the same case makes the same one.
func TestAChangedToolContractChangesTheIdentity(t *testing.T) {
	kase := &cases.Case{ID: "c", Instruction: "do it"}
	eff := cases.Apply(kase, &cases.Treatment{ID: "t", Model: cases.ModelSpec{Provider: cases.ProviderScripted, Name: "m"}})
	requested := events.RunRequested{Components: []events.Component{{Name: "harness", Value: "requested"}, {Name: "model", Value: "m"}}}
	identity := func(containment *events.Containment, opts ...tools.RegistryOption) events.Digest {
		t.Helper()
		reg, err := tools.NewRegistry(nil, opts...)
		if err != nil {
			t.Fatal(err)
		}
		a := &attempt{kase: kase, eff: eff, registry: reg, requested: requested}
		claim := events.RunClaimed{Runner: "r", Lease: 1, Containment: containment}
		if err := a.claimIdentity(&claim); err != nil {
			t.Fatal(err)
		}
		if claim.Identity == "" {
			t.Fatal("no identity claimed")
		}
		return claim.Identity
	}
	base := identity(nil)
	if again := identity(nil); again != base {
		t.Fatalf("one runner, one case, two identities: %s and %s", base, again)
	}
	if other := identity(nil, tools.WithHTTPTimeout(7*time.Second)); other == base {
		t.Fatal("a changed tool contract left the identity as it was")
	}
	contained := &events.Containment{Provider: "process", Features: []events.ContainmentFeature{{Name: "session", State: events.ContainmentActive}}}
	if other := identity(contained); other == base {
		t.Fatal("another containment left the identity as it was")
	}
	// Words that explain a state (they may name this host's work
	// directory) are not behaviour: two runners that differ only there are
	// one agent.
	explained := &events.Containment{Provider: "process", Features: []events.ContainmentFeature{{Name: "session", State: events.ContainmentActive, Detail: "/var/tmp/runner-7"}}}
	if a, b := identity(contained), identity(explained); a != b {
		t.Fatal("a feature's detail changed the identity")
	}
}
