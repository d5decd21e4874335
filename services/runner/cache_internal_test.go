package runner

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/factline/factline/cases"
	"github.com/factline/factline/events"
	"github.com/factline/factline/models"
	"github.com/factline/factline/services/runner/tools"
)

// An attempt that may be served cached replies claims another agent
// identity than one that may not, and read differs from read_write; a
// cache that is off, said or not, leaves the identity as it was before
// caches existed.
func TestACacheChangesTheIdentity(t *testing.T) {
	kase := &cases.Case{ID: "c", Instruction: "do it"}
	reg, err := tools.NewRegistry(nil)
	if err != nil {
		t.Fatal(err)
	}
	identity := func(cache *cases.Cache) events.Digest {
		t.Helper()
		tr := &cases.Treatment{ID: "t", Model: cases.ModelSpec{Provider: cases.ProviderOpenAI, Name: "m"}, Cache: cache}
		a := &attempt{kase: kase, eff: cases.Apply(kase, tr), registry: reg}
		claim := events.RunClaimed{Runner: "r", Lease: 1}
		if err := a.claimIdentity(&claim); err != nil {
			t.Fatal(err)
		}
		return claim.Identity
	}
	none, off := identity(nil), identity(&cases.Cache{Mode: cases.CacheOff})
	read, rw := identity(&cases.Cache{Mode: cases.CacheRead}), identity(&cases.Cache{Mode: cases.CacheReadWrite})
	if none != off {
		t.Fatal("an explicit off changed the identity")
	}
	if read == off || rw == off || read == rw {
		t.Fatalf("identities off %s, read %s, read_write %s: a cache must show", off, read, rw)
	}
}

// What makes two replies comparable: the endpoint, the model and every
// setting change the cache identity; a price does not.
func TestTheCacheIdentity(t *testing.T) {
	kase := &cases.Case{ID: "c"}
	id := func(m cases.ModelSpec) events.Digest {
		t.Helper()
		tr := &cases.Treatment{ID: "t", Model: m, Cache: &cases.Cache{Mode: cases.CacheReadWrite}}
		a := &attempt{eff: cases.Apply(kase, tr)}
		c, err := newResponseCache(kase, tr, a.settings(), 1)
		if err != nil || c == nil {
			t.Fatalf("%v %v", c, err)
		}
		return c.identity
	}
	zero, one := 0.0, 1.0
	base := cases.ModelSpec{Provider: cases.ProviderOpenAI, Name: "m", BaseURL: "http://127.0.0.1:1/v1", Temperature: &zero}
	priced := base
	priced.InputPrice, priced.OutputPrice = 3, 9
	if id(base) != id(priced) {
		t.Fatal("a price changed the cache identity")
	}
	for name, change := range map[string]func(*cases.ModelSpec){
		"name":        func(m *cases.ModelSpec) { m.Name = "m2" },
		"endpoint":    func(m *cases.ModelSpec) { m.BaseURL = "http://127.0.0.1:2/v1" },
		"temperature": func(m *cases.ModelSpec) { m.Temperature = &one },
		"max tokens":  func(m *cases.ModelSpec) { m.MaxOutputTokens = 100 },
	} {
		m := base
		change(&m)
		if id(m) == id(base) {
			t.Errorf("another %s kept the cache identity", name)
		}
	}
	if c, err := newResponseCache(kase, &cases.Treatment{Model: base}, models.Settings{}, 1); c != nil || err != nil {
		t.Fatalf("a treatment without a cache has one: %v %v", c, err)
	}
}

// Trials sample the model again: trial 2 of a re-run is served trial 2's
// replies, never trial 1's, so a cached suite's pass@k still counts k
// samples.
func TestEachTrialHasItsOwnCacheEntries(t *testing.T) {
	kase := &cases.Case{ID: "c"}
	tr := &cases.Treatment{ID: "t", Model: cases.ModelSpec{Provider: cases.ProviderOpenAI, Name: "m"},
		Cache: &cases.Cache{Mode: cases.CacheReadWrite}}
	ids := map[events.Digest]uint32{}
	for trial := uint32(1); trial <= 3; trial++ {
		c, err := newResponseCache(kase, tr, models.Settings{Model: "m"}, trial)
		if err != nil || c == nil {
			t.Fatalf("%v %v", c, err)
		}
		if other, ok := ids[c.identity]; ok {
			t.Fatalf("trials %d and %d share cache entries", other, trial)
		}
		ids[c.identity] = trial
	}
}

// An entry is trusted only when it names this identity and this request
// and holds a reply of known usage; anything else is foreign.
func TestACacheEntryIsVerified(t *testing.T) {
	c := &responseCache{reads: true, identity: events.DigestOf([]byte("identity"))}
	req := events.DigestOf([]byte("request"))
	good := cacheEntry{Format: cacheFormat, Identity: c.identity, Request: req,
		Reply: models.Reply{Text: "hi", Usage: &models.Usage{InputTokens: 5, OutputTokens: 1}}}
	enc := func(e cacheEntry) []byte {
		data, err := json.Marshal(e)
		if err != nil {
			t.Fatal(err)
		}
		return data
	}
	if e, err := c.verify(enc(good), req); err != nil || e.Reply.Text != "hi" {
		t.Fatalf("a good entry refused: %v", err)
	}
	other := good
	other.Identity = events.DigestOf([]byte("another model"))
	otherReq := good
	otherReq.Request = events.DigestOf([]byte("another request"))
	unknown := good
	unknown.Reply.Usage = nil
	format := good
	format.Format = "factline-cache/0"
	for name, data := range map[string][]byte{
		"another identity": enc(other), "another request": enc(otherReq), "unknown usage": enc(unknown),
		"another format": enc(format), "not JSON": []byte("{"), "an extra field": []byte(`{"format":"factline-cache/1","x":1}`),
	} {
		if _, err := c.verify(data, req); !errors.Is(err, errForeignEntry) {
			t.Errorf("%s: got %v, want a foreign entry", name, err)
		}
	}
}
