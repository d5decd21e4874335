package cases

import (
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/factline/factline/cases/httpallow"
	"github.com/goccy/go-yaml/ast"
)

// HTTPPolicy lets a case's model make external effects with the http_call
// tool: POSTs to the endpoints it allows, each carrying its operation ID as
// the Idempotency-Key header. What a retry after a crash may do is the
// contract's call, never the model's.
type HTTPPolicy struct {
	// Allow lists the endpoints a call may POST to, each an http(s) URL
	// whose scheme, host, port and path prefix a call's URL must match
	// (package httpallow); nothing else is reached.
	Allow AllowList `yaml:"allow" json:"allow"`
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
		return fieldErr(field+".allow", "list the endpoints http_call may reach")
	}
	for i, a := range p.Allow {
		if _, err := httpallow.ParseEntry(a); err != nil {
			return fieldErr(fmt.Sprintf("%s.allow[%d]", field, i), "%v", err)
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

// CheckURL says whether http_call may POST to raw: nil when an allow
// entry covers it, otherwise an error (httpallow.ErrNotAllowed) saying why
// not.
func (p *HTTPPolicy) CheckURL(raw string) error {
	if p == nil {
		return &httpallow.Error{URL: raw, Reason: "the case allows no endpoint"}
	}
	l, err := httpallow.ParseList(p.Allow)
	if err != nil {
		return err
	}
	return l.Check(raw)
}

// Allows reports whether http_call may POST to raw (CheckURL finds nothing
// wrong).
func (p *HTTPPolicy) Allows(raw string) bool { return p.CheckURL(raw) == nil }

// AllowList is http.allow: the endpoints http_call may reach. Each entry
// is checked as it is read, so that a bad one is named by its line.
type AllowList []string

// UnmarshalYAML reads the list, refusing an entry that is not an allow
// entry (httpallow.ParseEntry), naming its line and index.
func (l *AllowList) UnmarshalYAML(node ast.Node) error {
	seq, ok := node.(*ast.SequenceNode)
	if !ok {
		if _, null := node.(*ast.NullNode); null {
			*l = nil
			return nil
		}
		return nodeErr(node, "want a list of URLs, got %s", gotOf(node, nil))
	}
	out := make(AllowList, 0, len(seq.Values))
	for _, v := range seq.Values {
		s, ok := v.(*ast.StringNode)
		if !ok {
			return nodeErr(v, "want a URL, got %s", gotOf(v, nil))
		}
		if _, err := httpallow.ParseEntry(s.Value); err != nil {
			return nodeErr(v, "%v", err)
		}
		out = append(out, s.Value)
	}
	*l = out
	return nil
}

// StatusURL is the lookup URL of an operation ("" when the sink has none).
func (p *HTTPPolicy) StatusURL(operation string) string {
	if p == nil || p.Status == "" {
		return ""
	}
	return strings.ReplaceAll(p.Status, "{operation}", url.PathEscape(operation))
}
