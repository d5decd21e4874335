package runner

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/factline/factline/bus"
	"github.com/factline/factline/cases"
	"github.com/factline/factline/events"
	"github.com/factline/factline/models"
	"github.com/factline/factline/models/hosted"
	"github.com/factline/factline/ops/metrics"
	"github.com/factline/factline/services/runner/step"
)

// The response cache: a model call whose rendered request (the digest
// turn.started committed) an earlier call of the same model identity sent
// takes that call's reply instead of calling the model. The bus holds,
// under a digest of (identity, request), the digest of an entry blob that
// names both again beside the reply and the call that first got it; a
// reader trusts an entry only when the blob is whole and names the
// identity and the request it looked up, and only serves its reply when
// the log holds that very reply at the call the entry cites (step.
// CheckCached). The cache is an index into the append-only log, never a
// second source of truth: an entry rewritten by anyone who may write the
// bucket and the blobs is a refused hit, never a forged reply.

// cacheFormat names the entry format and seeds the key: an entry of
// another format is never read as this one.
const cacheFormat = "factline-cache/1"

// cacheIdentity is what makes two replies comparable: the provider, the
// endpoint it was reached at, the model and every request setting (the
// rendered request holds the settings too; naming them here keeps the
// identity readable on its own), and for a scripted model the script,
// which answers by turn whatever the request says. Prices are left out:
// they change what a call costs, never what the model says. The trial is
// in: trials sample the model again, so a re-run's trial 2 takes trial 2's
// replies and a cached suite's pass@k still counts k samples.
type cacheIdentity struct {
	Trial    uint32          `json:"trial"`
	Provider string          `json:"provider"`
	Endpoint string          `json:"endpoint,omitempty"`
	Settings models.Settings `json:"settings"`
	Script   events.Digest   `json:"script,omitempty"`
}

// cacheEntry is the blob a cache key points at.
type cacheEntry struct {
	Format   string        `json:"format"`
	Identity events.Digest `json:"identity"`
	Request  events.Digest `json:"request"`
	Reply    models.Reply  `json:"reply"`
	// Where the reply was first given.
	Suite string `json:"suite"`
	Run   string `json:"run"`
	Turn  uint32 `json:"turn"`
}

// responseCache is one attempt's view of the cache: its mode and the
// identity of its model.
type responseCache struct {
	reads, writes bool
	identity      events.Digest
}

// newResponseCache returns the cache an attempt of kase under t uses, nil
// when its treatment's cache is off.
func newResponseCache(kase *cases.Case, t *cases.Treatment, settings models.Settings, trial uint32) (*responseCache, error) {
	if !t.CacheReads() && !t.CacheWrites() {
		return nil, nil
	}
	id := cacheIdentity{Trial: trial, Provider: t.Model.Provider, Settings: settings}
	switch {
	case hosted.Is(t.Model.Provider):
		id.Endpoint = hosted.Endpoint(t.Model)
	case t.Model.Provider == cases.ProviderScripted:
		id.Script = events.DigestOf([]byte(t.Model.ScriptFiles[kase.ID]))
	}
	data, err := json.Marshal(id)
	if err != nil {
		return nil, fmt.Errorf("response cache identity: %w", err)
	}
	return &responseCache{reads: t.CacheReads(), writes: t.CacheWrites(), identity: events.DigestOf(data)}, nil
}

// key is where the cache keeps the entry for a request of this identity.
func (c *responseCache) key(request events.Digest) events.Digest {
	return events.DigestOf([]byte(cacheFormat + "\n" + string(c.identity) + "\n" + string(request)))
}

// errForeignEntry marks an entry that does not hold a reply of this
// identity to this request.
var errForeignEntry = errors.New("the cache entry is not a reply of this model to this request")

// verify decodes an entry blob and checks that it answers request under
// this identity with a reply whose usage is known.
func (c *responseCache) verify(data []byte, request events.Digest) (cacheEntry, error) {
	var e cacheEntry
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&e); err != nil {
		return cacheEntry{}, fmt.Errorf("%w: %v", errForeignEntry, err)
	}
	switch {
	case e.Format != cacheFormat:
		return cacheEntry{}, fmt.Errorf("%w: format %q", errForeignEntry, e.Format)
	case e.Identity != c.identity:
		return cacheEntry{}, fmt.Errorf("%w: model identity %s", errForeignEntry, e.Identity)
	case e.Request != request:
		return cacheEntry{}, fmt.Errorf("%w: request %s", errForeignEntry, e.Request)
	case e.Reply.Usage == nil:
		return cacheEntry{}, fmt.Errorf("%w: its usage is unknown", errForeignEntry)
	}
	return e, nil
}

// cacheLookup returns the cached reply to request, billed nothing, and where it
// came from; false on a miss. Only a bus that failed under it is an error
// (the run resumes from the log): whatever else is wrong with an entry
// makes it a miss.
func (a *attempt) cacheLookup(ctx context.Context, c *responseCache, request events.Digest) (models.Reply, *events.CachedReply, bool, error) {
	value, ok, err := a.svc.bus.Responses().Get(ctx, c.key(request))
	if err != nil {
		if bus.Transient(err) {
			return models.Reply{}, nil, false, err
		}
		a.svc.log.Warn("response cache: lookup failed; calling the model", "suite", a.suite, "run", a.run, "err", err)
		return models.Reply{}, nil, false, nil
	}
	count := func(result string) {
		metrics.ModelCache.WithLabelValues(a.model.Provider(), result).Inc()
	}
	if !ok {
		count("miss")
		return models.Reply{}, nil, false, nil
	}
	miss := func(err error, attrs ...any) (models.Reply, *events.CachedReply, bool, error) {
		count("refused")
		attrs = append([]any{"suite", a.suite, "run", a.run, "entry", value}, attrs...)
		a.svc.log.Warn("response cache: entry refused; calling the model", append(attrs, "err", err)...)
		return models.Reply{}, nil, false, nil
	}
	entry := events.Digest(value)
	if err := entry.Validate("entry"); err != nil {
		return miss(err)
	}
	data, err := a.svc.bus.Blobs().Get(ctx, entry)
	if err != nil {
		if bus.Transient(err) {
			return models.Reply{}, nil, false, err
		}
		return miss(err)
	}
	e, err := c.verify(data, request)
	if err != nil {
		return miss(err)
	}
	reply := e.Reply
	u := *reply.Usage
	from := &events.CachedReply{Entry: entry, Suite: e.Suite, Run: e.Run, Turn: e.Turn, Cost: u.Cost}
	u.Cost = new(uint64) // served from the log of an earlier call: nothing is billed
	reply.Usage = &u
	if err := a.checkOrigin(ctx, c, request, reply, from); err != nil {
		if bus.Transient(err) {
			return models.Reply{}, nil, false, err
		}
		return miss(err, "origin", fmt.Sprintf("%s/%s turn %d", from.Suite, from.Run, from.Turn))
	}
	count("hit")
	return reply, from, true, nil
}

// checkOrigin loads the run a cache entry cites and checks that the reply
// it would serve is the reply that run committed at the turn it names, to
// the same request under the same identity (step.CheckCached). Only a bus
// that failed under it is a transient error; anything else refuses the hit.
func (a *attempt) checkOrigin(ctx context.Context, c *responseCache, request events.Digest, reply models.Reply, from *events.CachedReply) error {
	if err := events.ValidateToken("the entry's suite", from.Suite); err != nil {
		return err
	}
	if err := events.ValidateToken("the entry's run", from.Run); err != nil {
		return err
	}
	served := repliedFact(max(from.Turn, 1), a.model.Provider(), redactReply(a.svc.secrets, reply))
	served.Cached, served.CacheIdentity = from, c.identity
	facts, err := a.originFacts(ctx, from.Suite, from.Run, from.Turn)
	if err != nil {
		return err
	}
	return step.CheckCached(served, request, step.FindOrigin(facts, from.Turn))
}

// originFacts returns the facts of the run a cache entry cites. An
// attempt's hits usually all cite one earlier run: it is kept, and loaded
// again only when it does not hold the turn asked for yet.
func (a *attempt) originFacts(ctx context.Context, suite, run string, turn uint32) ([]events.Fact, error) {
	if o := a.origin; o != nil && o.suite == suite && o.run == run && step.FindOrigin(o.facts, turn).Replied != nil {
		return o.facts, nil
	}
	log, err := a.svc.bus.LoadRun(ctx, suite, run)
	if err != nil {
		return nil, fmt.Errorf("load the run the cache entry cites, %s/%s: %w", suite, run, err)
	}
	a.origin = &originRun{suite: suite, run: run, facts: log.Facts()}
	return a.origin.facts, nil
}

// originRun is the run an attempt's last cache hit cited, as loaded.
type originRun struct {
	suite, run string
	facts      []events.Fact
}

// cacheStore writes a reply the model gave into the cache. A reply whose usage
// is unknown is not stored (its hit could be billed neither as zero nor as
// known tokens). Storing is best effort: the reply is the run's whatever
// becomes of its entry.
func (a *attempt) cacheStore(ctx context.Context, c *responseCache, request events.Digest, turn uint32, reply models.Reply) {
	if reply.Usage == nil {
		return
	}
	data, err := json.Marshal(cacheEntry{Format: cacheFormat, Identity: c.identity, Request: request,
		Reply: redactReply(a.svc.secrets, reply), Suite: a.suite, Run: a.run, Turn: turn})
	if err == nil {
		var entry events.Digest
		if entry, err = a.svc.bus.Blobs().Put(ctx, data); err == nil {
			err = a.svc.bus.Responses().Put(ctx, c.key(request), entry)
		}
	}
	if err != nil {
		a.svc.log.Warn("response cache: storing the reply failed", "suite", a.suite, "run", a.run, "turn", turn, "err", err)
	}
}

// answer is the reply to a started turn's request: the cache's when the
// treatment reads it and holds one, else the model's (stored when the
// treatment writes the cache). cached says where a cached reply came
// from; nil when the model answered.
func (a *attempt) answer(ctx context.Context, req models.Request, turn uint32, request events.Digest) (models.Reply, *events.CachedReply, error) {
	if a.respCache == nil && a.eff.Treatment != nil && a.eff.Treatment.CacheMode() != cases.CacheOff {
		c, err := newResponseCache(a.kase, a.eff.Treatment, a.settings(), a.requested.Trial)
		if err != nil {
			return models.Reply{}, nil, err
		}
		a.respCache = c
	}
	c := a.respCache
	if c != nil && c.reads {
		reply, from, ok, err := a.cacheLookup(ctx, c, request)
		if err != nil || ok {
			return reply, from, err
		}
	}
	reply, err := a.callModel(ctx, req)
	if err == nil && c != nil && c.writes {
		a.cacheStore(ctx, c, request, turn, reply)
	}
	return reply, nil, err
}
