package suites

import (
	"path/filepath"
	"testing"

	"github.com/factline/factline/cases"
)

// A treatment that reads the response cache is another agent than one
// that calls the model every time, and says so in a component of its own,
// so a comparison between them names the cache among what differs; a
// treatment with the cache off has no such component and keeps the
// identity it had before caches existed.
func TestACacheIsAComponentOfTheRequestedIdentity(t *testing.T) {
	dir := tree(t, suiteFiles(goodSuite))
	s, err := Load(filepath.Join(dir, "suite.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	c, base := s.Cases[0], s.Treatments[0]
	id, comps, err := AgentIdentity(c, base)
	if err != nil {
		t.Fatal(err)
	}
	for _, comp := range comps {
		if comp.Name == ComponentCache {
			t.Fatalf("a treatment without a cache has a cache component %q", comp.Value)
		}
	}
	off := *base
	off.Cache = &cases.Cache{Mode: cases.CacheOff}
	if got, _, err := AgentIdentity(c, &off); err != nil || got != id {
		t.Fatalf("cache off changed the identity (%v)", err)
	}
	for _, mode := range []string{cases.CacheRead, cases.CacheReadWrite} {
		cached := *base
		cached.Cache = &cases.Cache{Mode: mode}
		got, comps, err := AgentIdentity(c, &cached)
		if err != nil {
			t.Fatal(err)
		}
		if got == id {
			t.Fatalf("cache %s kept the identity", mode)
		}
		found := false
		for _, comp := range comps {
			found = found || (comp.Name == ComponentCache && comp.Value == mode)
		}
		if !found {
			t.Errorf("cache %s: components %v have no cache component", mode, comps)
		}
	}
}
