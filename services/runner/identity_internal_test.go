package runner

import (
	"strings"
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

// The identity a runner claims names the system prompt it sends: another
// prompt is another agent, and the default adds nothing (the identity
// runners claimed before prompts could be set).
func TestTheClaimedIdentityFollowsThePrompt(t *testing.T) {
	kase := &cases.Case{ID: "c", Instruction: "do it"}
	eff := cases.Apply(kase, &cases.Treatment{ID: "t", Model: cases.ModelSpec{Provider: cases.ProviderScripted, Name: "m"}})
	requested := events.RunRequested{Components: []events.Component{{Name: "harness", Value: "requested"}}}
	reg, err := tools.NewRegistry(nil)
	if err != nil {
		t.Fatal(err)
	}
	harness := func(system string) string {
		t.Helper()
		a := &attempt{kase: kase, eff: eff, registry: reg, requested: requested, system: system}
		claim := events.RunClaimed{Runner: "r", Lease: 1}
		if err := a.claimIdentity(&claim); err != nil {
			t.Fatal(err)
		}
		return string(claim.Identity)
	}
	if harness(cases.DefaultSystemPrompt) == harness("Be terse.") || harness("Be terse.") != harness("Be terse.") {
		t.Fatal("the claimed identity does not follow the prompt")
	}
}

// A runner sends only the prompt the run's request names: the digest of
// its prompt component, or the default when it has none. A request with
// no identity at all (an older submitter's) names nothing to check.
func TestARunnerSendsOnlyTheRequestedPrompt(t *testing.T) {
	terse := string(events.DigestOf([]byte("Be terse.")))
	base := []events.Component{{Name: "model", Value: "m"}}
	named := append([]events.Component{{Name: "prompt", Value: terse}}, base...)
	for _, c := range []struct {
		comps  []events.Component
		system string
		want   string
	}{
		{base, cases.DefaultSystemPrompt, ""},
		{named, "Be terse.", ""},
		{nil, "Be terse.", ""},
		{base, "Be terse.", "the system prompt rendered here is prompt " + terse + ", the request names the default prompt"},
		{named, cases.DefaultSystemPrompt, "the system prompt rendered here is the default prompt, the request names prompt " + terse},
		{named, "Be terse!", "the request names prompt " + terse},
	} {
		err := requestedPrompt(c.comps, c.system)
		if (c.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), c.want)) {
			t.Errorf("%v with %q: %v, want %q", c.comps, c.system, err, c.want)
		}
	}
}
