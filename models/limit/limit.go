// Package limit shares a model endpoint's capacity among every runner of a
// fleet: at most MaxConcurrent calls in flight and MaxRequestsPerMinute
// calls started in any minute, per provider endpoint and model, with a
// concurrency that adapts to the provider's throttling (halved on a 429 or
// 503, grown back by one per limit's worth of successes).
//
// The rules (adaptive.go) are pure. The shared state lives behind Store,
// which package bus implements on a JetStream key-value bucket with leased
// slots; this package imports no NATS. Model wraps any models.Model so
// that each call holds a slot for its duration. docs/models.md describes
// it for operators.
package limit

import (
	"crypto/sha256"
	"encoding/hex"
	"time"
)

// Spec is a limit as a treatment sets it. A zero field is no limit of
// that kind.
type Spec struct {
	MaxConcurrent        int
	MaxRequestsPerMinute int
}

// DefaultLease is how long a slot stays held after its holder last
// renewed it: a holder that dies frees its slot within it.
const DefaultLease = 30 * time.Second

// Key names the limit of one model at one endpoint in the shared store: a
// token made of the provider, the endpoint and the model name, the same in
// every runner process (treatments naming the same model at the same
// endpoint share one limit).
func Key(provider, baseURL, model string) string {
	h := sha256.Sum256([]byte(provider + "\x00" + baseURL + "\x00" + model))
	return "m" + hex.EncodeToString(h[:12])
}

// Label is the readable name of a limit in metrics and logs.
func Label(provider, baseURL, model string) string {
	out := provider
	for _, p := range []string{baseURL, model} {
		if p != "" {
			out += " " + p
		}
	}
	return out
}
