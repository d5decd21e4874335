package step

import (
	"errors"
	"fmt"

	"github.com/factline/factline/events"
)

// A reply served from the response cache is only ever a copy of a reply
// the log already holds: the cache is an index into the append-only log,
// never a second source of truth. These rules say when a copy is true to
// the call it cites. The runner applies them before it serves a hit, and
// the audit applies them again to every hit a log records.

// ErrNotTheOrigin marks a cached reply that is not the reply committed at
// the call it cites.
var ErrNotTheOrigin = errors.New("the cached reply is not the one committed at the call it cites")

// Origin is the call a cached reply cites, as one run's facts hold it:
// the turn's turn.started (what was asked) and model.replied (what was
// answered). A fact the run does not hold is nil.
type Origin struct {
	Started, Replied *events.Fact
}

// FindOrigin returns turn's turn.started and model.replied among a run's
// facts, the first of each, as every reader of the log takes them.
func FindOrigin(facts []events.Fact, turn uint32) Origin {
	var o Origin
	for i := range facts {
		switch b := facts[i].Body.(type) {
		case events.TurnStarted:
			if b.Turn == turn && o.Started == nil {
				o.Started = &facts[i]
			}
		case events.ModelReplied:
			if b.Turn == turn && o.Replied == nil {
				o.Replied = &facts[i]
			}
		}
	}
	return o
}

// CheckCached says whether served, a reply recorded (or about to be
// recorded) as cached for a request whose digest is request, is true to
// origin, the call its Cached names. It returns nil when it is, and an
// error wrapping ErrNotTheOrigin that says what differs when it is not:
//
//   - the origin's turn exists, was asked the same request, and was
//     answered by the model itself (an honest entry names the call that
//     first got the reply, never another hit);
//   - it is a reply of the same provider and, where served names one, of
//     the same cache identity (older hits name none);
//   - the reply is the same: model, text, calls, finish and tokens, and the
//     cost the hit says was saved is the cost the origin was billed;
//   - the hit itself was billed nothing.
func CheckCached(served events.ModelReplied, request events.Digest, origin Origin) error {
	c := served.Cached
	if c == nil {
		return fmt.Errorf("%w: the reply does not say where it came from", ErrNotTheOrigin)
	}
	at := fmt.Sprintf("%s/%s turn %d", c.Suite, c.Run, c.Turn)
	if origin.Started == nil || origin.Replied == nil {
		return fmt.Errorf("%w: the log holds no reply at %s", ErrNotTheOrigin, at)
	}
	started := origin.Started.Body.(events.TurnStarted)
	replied := origin.Replied.Body.(events.ModelReplied)
	switch {
	case started.ContextDigest != request:
		return fmt.Errorf("%w: %s was asked %s, this call %s", ErrNotTheOrigin, at, started.ContextDigest, request)
	case replied.Cached != nil:
		return fmt.Errorf("%w: the reply at %s was itself served from the cache", ErrNotTheOrigin, at)
	case replied.Provider != served.Provider:
		return fmt.Errorf("%w: the reply at %s is of provider %s, this one of %s", ErrNotTheOrigin, at, replied.Provider, served.Provider)
	case served.CacheIdentity != "" && replied.CacheIdentity != served.CacheIdentity:
		return fmt.Errorf("%w: the call at %s has cache identity %q, this one %s", ErrNotTheOrigin, at, replied.CacheIdentity, served.CacheIdentity)
	}
	if d := ReplyDiff(served, replied); d != "" {
		return fmt.Errorf("%w: %s differs from the reply committed at %s", ErrNotTheOrigin, d, at)
	}
	var billed *uint64
	if replied.Usage != nil {
		billed = replied.Usage.Cost
	}
	if !samePtr(c.Cost, billed) {
		return fmt.Errorf("%w: it says the call at %s cost %s, the log says %s", ErrNotTheOrigin, at, show(c.Cost), show(billed))
	}
	if u := served.Usage; u != nil && u.Cost != nil && *u.Cost != 0 {
		return fmt.Errorf("%w: a cached reply is billed nothing, this one %d", ErrNotTheOrigin, *u.Cost)
	}
	return nil
}

// ReplyDiff names the first part of what the model said in which a and b
// differ: the model, the text (a text moved to a blob is compared by its
// digest), the tool calls, the finish reason and the tokens of the usage
// (its cost aside: a hit is billed nothing). "" when they say the same.
func ReplyDiff(a, b events.ModelReplied) string {
	switch {
	case a.Model != b.Model:
		return fmt.Sprintf("the model (%q, %q)", a.Model, b.Model)
	case textDigest(a) != textDigest(b):
		return fmt.Sprintf("the text (%s, %s)", textDigest(a), textDigest(b))
	case a.Finish != b.Finish:
		return fmt.Sprintf("the finish reason (%q, %q)", a.Finish, b.Finish)
	case len(a.Calls) != len(b.Calls):
		return fmt.Sprintf("the number of tool calls (%d, %d)", len(a.Calls), len(b.Calls))
	}
	for i := range a.Calls {
		x, y := a.Calls[i], b.Calls[i]
		if x.ID != y.ID || x.Name != y.Name || x.ArgsDigest != y.ArgsDigest {
			return fmt.Sprintf("tool call %d (%s %s %s, %s %s %s)", i+1, x.ID, x.Name, x.ArgsDigest, y.ID, y.Name, y.ArgsDigest)
		}
	}
	if (a.Usage == nil) != (b.Usage == nil) {
		return "the usage (known in one, unknown in the other)"
	}
	if a.Usage != nil {
		x, y := *a.Usage, *b.Usage
		if x.InputTokens != y.InputTokens || x.OutputTokens != y.OutputTokens ||
			!samePtr(x.CachedInputTokens, y.CachedInputTokens) || !samePtr(x.ReasoningTokens, y.ReasoningTokens) ||
			!samePtr(x.CacheWriteInputTokens, y.CacheWriteInputTokens) {
			return fmt.Sprintf("the tokens (%d in %d out, %d in %d out)", x.InputTokens, x.OutputTokens, y.InputTokens, y.OutputTokens)
		}
	}
	return ""
}

// textDigest is the digest of a reply's text, wherever it is kept.
func textDigest(r events.ModelReplied) events.Digest {
	if r.Text == "" && r.TextDigest != "" {
		return r.TextDigest
	}
	return events.DigestOf([]byte(r.Text))
}

func samePtr(a, b *uint64) bool {
	return a == nil && b == nil || a != nil && b != nil && *a == *b
}

func show(v *uint64) string {
	if v == nil {
		return "unknown"
	}
	return fmt.Sprint(*v)
}
