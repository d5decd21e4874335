package suites

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/factline/factline/cases"
)

// A fleet-wide model limit changes when calls are sent, a model timeout
// how long an answer is waited for, and max_reply_bytes how long an
// answer may be before the call fails, not what the agent is: a
// treatment with any of them has the identity of the same one without.
func TestModelLimitsAreNotPartOfTheIdentity(t *testing.T) {
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
	limited := *base
	two := 2
	limited.Model.Limits = &cases.ModelLimits{MaxConcurrent: &two}
	other, _, err := AgentIdentity(c, &limited)
	if err != nil {
		t.Fatal(err)
	}
	if other != id {
		t.Fatal("limits changed the agent's identity")
	}
	slow := *base
	slow.Model.Timeout = cases.Duration(10 * time.Minute)
	if other, _, err = AgentIdentity(c, &slow); err != nil || other != id {
		t.Fatalf("a model timeout changed the agent's identity (%v)", err)
	}
	capped := *base
	capped.Model.MaxReplyBytes = 1 << 20
	if other, _, err = AgentIdentity(c, &capped); err != nil || other != id {
		t.Fatalf("a model's max_reply_bytes changed the agent's identity (%v)", err)
	}
}
