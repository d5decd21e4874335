package step

import (
	"errors"
	"strings"
	"testing"

	"github.com/factline/factline/events"
)

var (
	cachedRequest  = events.DigestOf([]byte("the request"))
	cachedIdentity = events.DigestOf([]byte("the model identity"))
)

// origin is an earlier run's turn 2 as the runner commits it: asked
// cachedRequest, answered "41" by the model, billed 7.
func cachedOrigin(t *testing.T) []events.Fact {
	t.Helper()
	args := `{"n":41}`
	return factsOf(t,
		events.TurnStarted{Turn: 1, ContextDigest: events.DigestOf([]byte("turn 1"))},
		events.ModelReplied{Turn: 1, Provider: "openai", Text: "first"},
		events.TurnStarted{Turn: 2, ContextDigest: cachedRequest},
		events.ModelReplied{Turn: 2, Provider: "openai", Model: "m", Text: "41", Finish: "stop",
			Calls:         []events.ToolCall{{ID: "c1", Name: "answer", Args: args, ArgsDigest: events.DigestOf([]byte(args))}},
			Usage:         &events.Usage{InputTokens: 100, OutputTokens: 10, Cost: cost(7)},
			CacheIdentity: cachedIdentity},
	)
}

// served is the hit a later run records for the origin's turn 2.
func cachedServed() events.ModelReplied {
	args := `{"n":41}`
	return events.ModelReplied{Turn: 1, Provider: "openai", Model: "m", Text: "41", Finish: "stop",
		Calls:         []events.ToolCall{{ID: "c1", Name: "answer", Args: args, ArgsDigest: events.DigestOf([]byte(args))}},
		Usage:         &events.Usage{InputTokens: 100, OutputTokens: 10, Cost: cost(0)},
		CacheIdentity: cachedIdentity,
		Cached:        &events.CachedReply{Entry: events.DigestOf([]byte("entry")), Suite: "s", Run: "r1", Turn: 2, Cost: cost(7)}}
}

func checkServed(t *testing.T, served events.ModelReplied, origin []events.Fact) error {
	t.Helper()
	return CheckCached(served, cachedRequest, FindOrigin(origin, served.Cached.Turn))
}

func wantNotOrigin(t *testing.T, err error, says string) {
	t.Helper()
	if !errors.Is(err, ErrNotTheOrigin) || !strings.Contains(err.Error(), says) {
		t.Fatalf("got %v, want ErrNotTheOrigin saying %q", err, says)
	}
}

func TestACachedReplyTrueToItsOriginIsTaken(t *testing.T) {
	if err := checkServed(t, cachedServed(), cachedOrigin(t)); err != nil {
		t.Fatal(err)
	}
}

// The report's forgery: the entry's reply says 42 where the log says 41.
func TestACachedReplyWithAnotherTextIsRefused(t *testing.T) {
	s := cachedServed()
	s.Text = "42"
	wantNotOrigin(t, checkServed(t, s, cachedOrigin(t)), "the text")
}

func TestACachedReplyWithOtherCallsIsRefused(t *testing.T) {
	s := cachedServed()
	args := `{"n":42}`
	s.Calls = []events.ToolCall{{ID: "c1", Name: "answer", Args: args, ArgsDigest: events.DigestOf([]byte(args))}}
	wantNotOrigin(t, checkServed(t, s, cachedOrigin(t)), "tool call 1")
}

func TestACachedReplyWithOtherTokensIsRefused(t *testing.T) {
	s := cachedServed()
	s.Usage = &events.Usage{InputTokens: 1, OutputTokens: 1, Cost: cost(0)}
	wantNotOrigin(t, checkServed(t, s, cachedOrigin(t)), "the tokens")
}

func TestACachedReplyClaimingAnotherSavedCostIsRefused(t *testing.T) {
	s := cachedServed()
	s.Cached.Cost = cost(7000)
	wantNotOrigin(t, checkServed(t, s, cachedOrigin(t)), "cost 7000")
}

func TestACachedReplyCitingAMissingTurnIsRefused(t *testing.T) {
	s := cachedServed()
	s.Cached.Turn = 9
	wantNotOrigin(t, checkServed(t, s, cachedOrigin(t)), "holds no reply at s/r1 turn 9")
}

func TestACachedReplyCitingACallOfAnotherRequestIsRefused(t *testing.T) {
	s := cachedServed()
	s.Cached.Turn = 1
	s.Text = "first"
	wantNotOrigin(t, checkServed(t, s, cachedOrigin(t)), "was asked")
}

func TestACachedReplyOfAnotherIdentityIsRefused(t *testing.T) {
	s := cachedServed()
	s.CacheIdentity = events.DigestOf([]byte("another endpoint"))
	wantNotOrigin(t, checkServed(t, s, cachedOrigin(t)), "cache identity")
}

// An origin written before model.replied recorded the cache identity
// cannot show it was the same model: a runner, which always names its own,
// refuses it (and stores the model's reply in its place).
func TestAnOriginWithoutAnIdentityIsRefusedToAHitThatNamesOne(t *testing.T) {
	origin := cachedOrigin(t)
	r := origin[3].Body.(events.ModelReplied)
	r.CacheIdentity = ""
	origin[3].Body = r
	wantNotOrigin(t, checkServed(t, cachedServed(), origin), "cache identity")
	old := cachedServed()
	old.CacheIdentity = ""
	if err := checkServed(t, old, origin); err != nil {
		t.Fatalf("a hit and an origin both older than the identity: %v", err)
	}
}

// An honest entry names the call that first got the reply: a hit citing
// another hit is refused, whatever it copies.
func TestACachedReplyCitingAnotherHitIsRefused(t *testing.T) {
	origin := cachedOrigin(t)
	r := origin[3].Body.(events.ModelReplied)
	r.Cached = &events.CachedReply{Entry: events.DigestOf([]byte("e")), Suite: "s", Run: "r0", Turn: 2}
	origin[3].Body = r
	wantNotOrigin(t, checkServed(t, cachedServed(), origin), "itself served from the cache")
}

func TestACachedReplyOfAnotherProviderIsRefused(t *testing.T) {
	s := cachedServed()
	s.Provider = "scripted"
	wantNotOrigin(t, checkServed(t, s, cachedOrigin(t)), "provider")
}

// A text moved to a blob is the same text as its digest says.
func TestATextKeptAsABlobIsComparedByItsDigest(t *testing.T) {
	origin := cachedOrigin(t)
	r := origin[3].Body.(events.ModelReplied)
	r.Text, r.TextDigest = "", events.DigestOf([]byte("41"))
	origin[3].Body = r
	if err := checkServed(t, cachedServed(), origin); err != nil {
		t.Fatal(err)
	}
	r.TextDigest = events.DigestOf([]byte("42"))
	origin[3].Body = r
	wantNotOrigin(t, checkServed(t, cachedServed(), origin), "the text")
}

func TestACachedReplyThatWasBilledIsRefused(t *testing.T) {
	s := cachedServed()
	s.Usage.Cost = cost(7)
	wantNotOrigin(t, checkServed(t, s, cachedOrigin(t)), "billed nothing")
}
