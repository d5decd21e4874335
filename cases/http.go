package cases

import (
	"fmt"
	"net/url"
	"strings"
	"time"
)

// HTTPPolicy lets a case's model make external effects with the http_call
// tool: POSTs to the endpoints it allows, each carrying its operation ID as
// the Idempotency-Key header. What a retry after a crash may do is the
// contract's call, never the model's.
type HTTPPolicy struct {
	// Allow lists URL prefixes a call may POST to; nothing else is reached.
	Allow []string `yaml:"allow" json:"allow"`
	// Dedupe says the sink deduplicates by Idempotency-Key, so a call whose
	// outcome is unknown may be sent again under the same key.
	Dedupe bool `yaml:"dedupe,omitempty" json:"dedupe,omitempty"`
	// Status is a URL template for looking an operation up, with
	// {operation} replaced by the (escaped) operation ID: a GET that answers
	// 200 when the operation took effect and 404 when it did not.
	Status string `yaml:"status,omitempty" json:"status,omitempty"`
	// Approval says every call needs a person's approval of its exact
	// arguments before it is sent.
	Approval bool `yaml:"approval,omitempty" json:"approval,omitempty"`
	// Timeout bounds each call (default 30s). A call without an answer in
	// time has an unknown outcome, which is reconciled before the run goes
	// on (docs/controls.md).
	Timeout Duration `yaml:"timeout,omitempty" json:"timeout,omitempty"`
	// Settle is how long after a call's answer was lost the sink may
	// still apply it (default DefaultSettle): until then a status lookup
	// that finds nothing is no proof that it never will, and the call is
	// not sent again on its word (docs/tools.md).
	Settle Duration `yaml:"settle,omitempty" json:"settle,omitempty"`
}

// DefaultSettle is the settle window of a case that sets none.
const DefaultSettle = 5 * time.Second

// MaxSettle bounds http.settle.
const MaxSettle = 10 * time.Minute

// SettleWindow is how long after a lost answer a status lookup's "not
// found" proves nothing (see Settle).
func (p *HTTPPolicy) SettleWindow() time.Duration {
	if p == nil || p.Settle == 0 {
		return DefaultSettle
	}
	return p.Settle.Std()
}

// Bounds of http.timeout.
const (
	MinHTTPTimeout = 100 * time.Millisecond
	MaxHTTPTimeout = 10 * time.Minute
)

func (p *HTTPPolicy) check(field string) error {
	if p == nil {
		return nil
	}
	if len(p.Allow) == 0 {
		return fieldErr(field+".allow", "list the URL prefixes http_call may reach")
	}
	for i, a := range p.Allow {
		u, err := url.Parse(a)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fieldErr(fmt.Sprintf("%s.allow[%d]", field, i), "%q is not an http(s) URL prefix", a)
		}
	}
	if p.Status != "" && !strings.Contains(p.Status, "{operation}") {
		return fieldErr(field+".status", "the template needs {operation}")
	}
	if t := p.Timeout.Std(); t != 0 && (t < MinHTTPTimeout || t > MaxHTTPTimeout) {
		return fieldErr(field+".timeout", "%v is outside %v to %v", t, MinHTTPTimeout, MaxHTTPTimeout)
	}
	if s := p.Settle.Std(); s < 0 || s > MaxSettle {
		return fieldErr(field+".settle", "%v is outside 0 to %v", s, MaxSettle)
	}
	return nil
}

// Allows reports whether a URL is under one of the allowed prefixes.
func (p *HTTPPolicy) Allows(raw string) bool {
	if p == nil {
		return false
	}
	for _, a := range p.Allow {
		if strings.HasPrefix(raw, a) {
			return true
		}
	}
	return false
}

// StatusURL is the lookup URL of an operation ("" when the sink has none).
func (p *HTTPPolicy) StatusURL(operation string) string {
	if p == nil || p.Status == "" {
		return ""
	}
	return strings.ReplaceAll(p.Status, "{operation}", url.PathEscape(operation))
}
