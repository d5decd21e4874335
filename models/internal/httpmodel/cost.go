package httpmodel

import (
	"math"
	"math/bits"

	"github.com/factline/factline/models"
)

// Priced is a token count at a price in cost units per million tokens.
type Priced struct {
	Tokens, Price uint64
}

// Cost is ceil(Σ tokens×price / 1e6) in cost units, saturating at the
// largest uint64 instead of overflowing.
func Cost(parts ...Priced) uint64 {
	var hi, lo uint64
	for _, p := range parts {
		h, l := bits.Mul64(p.Tokens, p.Price)
		var carry, overflow uint64
		lo, carry = bits.Add64(lo, l, 0)
		hi, overflow = bits.Add64(hi, h, carry)
		if overflow != 0 {
			return math.MaxUint64
		}
	}
	// Round up: add 1e6-1 to the 128-bit sum.
	lo, carry := bits.Add64(lo, 1_000_000-1, 0)
	hi, overflow := bits.Add64(hi, 0, carry)
	if overflow != 0 || hi >= 1_000_000 {
		return math.MaxUint64
	}
	q, _ := bits.Div64(hi, lo, 1_000_000)
	return q
}

// Prices are a model's prices in cost units per million tokens. 0 is
// unknown.
type Prices struct {
	Input, Output uint64
	// CacheRead prices the input tokens read from the provider's prompt
	// cache; unknown (0) means the Input price, an upper bound: no
	// provider charges more for a cached read than for an uncached one.
	CacheRead uint64
	// CacheWrite prices the input tokens written to the prompt cache,
	// which providers charge above Input; unknown (0) makes the cost of a
	// call that wrote any unknown.
	CacheWrite uint64
}

// Known reports whether the input and output prices are known: without
// them no cost is.
func (p Prices) Known() bool { return p.Input > 0 && p.Output > 0 }

// Of is the cost of u, nil when a part of it has no known price.
func (p Prices) Of(u models.Usage) *uint64 {
	if !p.Known() {
		return nil
	}
	var cached, written uint64
	if u.CachedInputTokens != nil {
		cached = *u.CachedInputTokens
	}
	if u.CacheWriteInputTokens != nil {
		written = *u.CacheWriteInputTokens
	}
	if written > 0 && p.CacheWrite == 0 {
		return nil
	}
	read := p.CacheRead
	if read == 0 {
		read = p.Input
	}
	// Parts larger than the whole (a provider's inconsistency) are cut to
	// it: no part is priced twice and nothing wraps around.
	cached = min(cached, u.InputTokens)
	written = min(written, u.InputTokens-cached)
	plain := u.InputTokens - cached - written
	c := Cost(Priced{plain, p.Input}, Priced{cached, read}, Priced{written, p.CacheWrite}, Priced{u.OutputTokens, p.Output})
	return &c
}

// Reserve is the worst-case cost of a call of in input and out output
// tokens: every input token at the dearest input price. 0 when the
// prices are unknown.
func (p Prices) Reserve(in, out uint64) uint64 {
	if !p.Known() {
		return 0
	}
	return Cost(Priced{in, max(p.Input, p.CacheWrite, p.CacheRead)}, Priced{out, p.Output})
}
