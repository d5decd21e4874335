package suites

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/factline/factline/cases"
)

// "Delegation allowed" is a component of the identity: a treatment that
// may hand part of its task to child runs is another agent, and says so
// by name; one that does not (absent, or not allowed) keeps the identity
// it had before delegation existed.
func TestDelegationAllowedIsAComponentOfTheIdentity(t *testing.T) {
	dir := tree(t, suiteFiles(goodSuite))
	s, err := Load(filepath.Join(dir, "suite.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	c, base := s.Cases[0], s.Treatments[0]
	id, _, err := AgentIdentity(c, base)
	if err != nil {
		t.Fatal(err)
	}
	off := *base
	off.Delegation = &cases.Delegation{Allowed: false}
	if got, _, err := AgentIdentity(c, &off); err != nil || got != id {
		t.Fatalf("delegation not allowed changed the identity (%v)", err)
	}
	on := *base
	on.Delegation = &cases.Delegation{Allowed: true}
	got, comps, err := AgentIdentity(c, &on)
	if err != nil || got == id {
		t.Fatalf("delegation allowed kept the identity (%v)", err)
	}
	var value, caps string
	for _, comp := range comps {
		switch comp.Name {
		case ComponentDelegation:
			value = comp.Value
		case ComponentCapabilities:
			caps = comp.Value
		}
	}
	if value != "allowed" || !strings.Contains(caps, `"delegate"`) {
		t.Fatalf("components: delegation %q, capabilities %s", value, caps)
	}
}
