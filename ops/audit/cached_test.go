package audit

import (
	"testing"

	"github.com/factline/factline/events"
)

var (
	hitRequest  = events.DigestOf([]byte("request of turn 1"))
	hitIdentity = events.DigestOf([]byte("openai m1 t=0 trial 1"))
)

func billed(v uint64) *uint64 { return &v }

// firstRun is suite "first", run "r": the model answers turn 1 "41".
func firstRun(t *testing.T) *runLog {
	l := &runLog{t: t, suite: "first", run: "r"}
	l.add(events.RunClaimed{Runner: "a", Lease: 1})
	l.add(events.TurnStarted{Turn: 1, ContextDigest: hitRequest})
	l.add(events.ModelReplied{Turn: 1, Provider: "openai", Model: "m1", Text: "41", Finish: "stop",
		Usage: &events.Usage{InputTokens: 100, OutputTokens: 10, Cost: billed(110)}, CacheIdentity: hitIdentity})
	return l
}

// rerun is suite "again", run "r": turn 1 served from the cache, citing
// the first run's turn 1, with the given text.
func rerun(t *testing.T, text string) *runLog {
	l := &runLog{t: t, suite: "again", run: "r"}
	l.add(events.RunClaimed{Runner: "a", Lease: 1})
	l.add(events.TurnStarted{Turn: 1, ContextDigest: hitRequest})
	l.add(events.ModelReplied{Turn: 1, Provider: "openai", Model: "m1", Text: text, Finish: "stop",
		Usage: &events.Usage{InputTokens: 100, OutputTokens: 10, Cost: billed(0)}, CacheIdentity: hitIdentity,
		Cached: &events.CachedReply{Entry: events.DigestOf([]byte("entry")), Suite: "first", Run: "r", Turn: 1, Cost: billed(110)}})
	return l
}

func TestACachedReplyTrueToItsOriginPasses(t *testing.T) {
	origin, hit := firstRun(t), rerun(t, "41")
	if vs := Check(append(origin.facts, hit.facts...), Options{}); len(vs) != 0 {
		t.Fatalf("an honest hit: %v", vs)
	}
	// Audited alone (one suite), its origin given apart.
	if vs := Check(hit.facts, Options{Origins: origin.facts}); len(vs) != 0 {
		t.Fatalf("an honest hit, its origin given apart: %v", vs)
	}
}

// The outside report's forgery, as a log records it: the hit says 42,
// the turn it cites said 41. The violation names both.
func TestACachedReplyThatDisagreesWithItsOriginFails(t *testing.T) {
	origin, hit := firstRun(t), rerun(t, "42")
	vs := Check(append(origin.facts, hit.facts...), Options{})
	wantViolation(t, vs, RuleCacheOrigin, hit.last().ID.String(), "first/r turn 1", origin.last().ID.String(), "the text")
	if len(vs) != 1 || vs[0].Suite != "again" {
		t.Fatalf("want one violation of the hit's run: %v", vs)
	}
}

func TestACachedReplyWhoseOriginIsMissingFails(t *testing.T) {
	hit := rerun(t, "41")
	wantViolation(t, Check(hit.facts, Options{}), RuleCacheOrigin, hit.last().ID.String(), "holds no reply at first/r turn 1")
}

func TestACachedReplyCitingAnotherRequestOrIdentityFails(t *testing.T) {
	origin := firstRun(t)
	hit := &runLog{t: t, suite: "again", run: "r"}
	hit.add(events.RunClaimed{Runner: "a", Lease: 1})
	hit.add(events.TurnStarted{Turn: 1, ContextDigest: events.DigestOf([]byte("another request"))})
	cached := rerun(t, "41").last().Body.(events.ModelReplied)
	hit.add(cached)
	wantViolation(t, Check(append(origin.facts, hit.facts...), Options{}), RuleCacheOrigin, "was asked")

	other := rerun(t, "41")
	r := other.last().Body.(events.ModelReplied)
	r.CacheIdentity = events.DigestOf([]byte("another endpoint"))
	other.facts[len(other.facts)-1].Body = r
	wantViolation(t, Check(append(origin.facts, other.facts...), Options{}), RuleCacheOrigin, "cache identity")
}

// A runner serves a hit only once the reply it cites is in the log
// (step.CheckCached on the log it read), so the origin precedes the hit in
// log order. A hit citing a reply committed after it (an edited export
// that copied a later run's reply into an earlier one, billed nothing) is
// no hit, however true to that reply it is.
func TestACachedReplyCitingALaterReplyFails(t *testing.T) {
	origin, hit := firstRun(t), rerun(t, "41")
	vs := Check(append(hit.facts, origin.facts...), Options{})
	wantViolation(t, vs, RuleCacheOrigin, hit.last().ID.String(), "first/r turn 1", origin.last().ID.String(), "committed after it")
}
