package events

// ContextSummarised (context.summarised) is a condenser's summary of a
// run's turns From through Through, committed before turn Turn, the first
// whose context holds it. The summary is a recorded model call: the digest
// of its request (a blob), the reply's text and what it consumed, which is
// charged to the run and reported apart as context cost. The model-visible
// history is rebuilt from this fact, never by asking for the summary again.
type ContextSummarised struct {
	// Turn is the turn the summary is made for: the next turn to start.
	Turn uint32 `msgpack:"turn"`
	// From and Through are the first and the last turn the summary stands
	// for (a later summary folds in the earlier one, so From stays).
	From    uint32 `msgpack:"from"`
	Through uint32 `msgpack:"through"`
	// Summary is the summariser's reply, as the model will see it.
	Summary string `msgpack:"summary"`
	// RequestDigest is the digest of the rendered summary request (a blob).
	RequestDigest Digest `msgpack:"request_digest"`
	Provider      string `msgpack:"provider"`
	Model         string `msgpack:"model,omitempty"`
	// Usage is what the call consumed (nil: the provider reported none).
	Usage *Usage `msgpack:"usage,omitempty"`
	// Reserve is the worst-case cost reserved for the call, charged where
	// its cost is unknown.
	Reserve uint64 `msgpack:"reserve,omitempty"`
	// Tokens is the estimated size of the context the summary was made
	// from, before it.
	Tokens uint64 `msgpack:"tokens,omitempty"`
}

// Kind implements Body.
func (ContextSummarised) Kind() Kind { return KindContextSummarised }

func (b ContextSummarised) validate(p string) error {
	for _, c := range []struct {
		field string
		v     uint32
	}{{"turn", b.Turn}, {"from", b.From}, {"through", b.Through}} {
		if err := needPositive(p, c.field, c.v); err != nil {
			return err
		}
	}
	if b.From > b.Through {
		return invalid(join(p, "from"), "from %d is after through %d", b.From, b.Through)
	}
	if b.Through >= b.Turn {
		return invalid(join(p, "through"), "through %d is not before turn %d", b.Through, b.Turn)
	}
	if err := needDigest(p, "request_digest", b.RequestDigest); err != nil {
		return err
	}
	return needString(p, "provider", b.Provider)
}
