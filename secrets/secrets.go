// Package secrets keeps secret values out of the log. A Redactor knows a
// set of named secret values (model keys, NATS credentials, whatever the
// configuration names as secret) and replaces every occurrence, and its
// common encodings, with "[redacted:NAME]". It is applied where text enters
// the log: tool output, model text and tool-call arguments, error
// messages, and every log line (see NewHandler).
package secrets

import (
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"net/url"
	"slices"
	"strings"
)

// MinLen is the shortest value redacted. Shorter values ("1", "true",
// "admin") occur in ordinary text, and replacing them would shred the log
// while protecting nothing a guess could not find.
const MinLen = 8

// Secret is one named secret value.
type Secret struct {
	// Name says which secret it is (an environment variable or file name);
	// it is what the redaction marker shows.
	Name string
	// Value is the secret itself.
	Value string
}

// Redactor replaces secret values in text. The zero value and nil redact
// nothing. It is safe for concurrent use.
type Redactor struct {
	names    []string
	replacer *strings.Replacer
}

// Marker is what stands in for the secret named name.
func Marker(name string) string { return "[redacted:" + name + "]" }

// New returns a redactor of the given secrets. Values shorter than MinLen
// are ignored. When one value contains another, the longer one wins.
func New(secrets ...Secret) *Redactor {
	type pair struct{ old, new string }
	var pairs []pair
	seen := map[string]bool{}
	names := map[string]bool{}
	for _, s := range secrets {
		if len(s.Value) < MinLen {
			continue
		}
		names[s.Name] = true
		for _, form := range encodings(s.Value) {
			if len(form) < MinLen || seen[form] {
				continue
			}
			seen[form] = true
			pairs = append(pairs, pair{form, Marker(s.Name)})
		}
	}
	r := &Redactor{}
	for n := range names {
		r.names = append(r.names, n)
	}
	slices.Sort(r.names)
	if len(pairs) == 0 {
		return r
	}
	// strings.Replacer takes the first listed match at a position: longest
	// first, so a secret containing another is replaced whole.
	slices.SortStableFunc(pairs, func(a, b pair) int { return len(b.old) - len(a.old) })
	args := make([]string, 0, 2*len(pairs))
	for _, p := range pairs {
		args = append(args, p.old, p.new)
	}
	r.replacer = strings.NewReplacer(args...)
	return r
}

// encodings are the forms of a value worth looking for besides itself:
// standard and URL-safe base64 (padded or not), hex, URL query escaping
// and JSON string escaping. Each matches only where the value was encoded
// on its own; a secret encoded together with other text (HTTP basic auth
// of "user:password") is not found in that encoding.
func encodings(v string) []string {
	b := []byte(v)
	js, _ := json.Marshal(v)
	return []string{
		v,
		base64.StdEncoding.EncodeToString(b),
		base64.RawStdEncoding.EncodeToString(b),
		base64.URLEncoding.EncodeToString(b),
		base64.RawURLEncoding.EncodeToString(b),
		hex.EncodeToString(b),
		strings.ToUpper(hex.EncodeToString(b)),
		url.QueryEscape(v),
		url.PathEscape(v),
		strings.Trim(string(js), `"`),
	}
}

// Redact returns s with every secret replaced by its marker.
func (r *Redactor) Redact(s string) string {
	if r == nil || r.replacer == nil || s == "" {
		return s
	}
	return r.replacer.Replace(s)
}

// Names lists the names of the secrets redacted, sorted.
func (r *Redactor) Names() []string {
	if r == nil {
		return nil
	}
	return slices.Clone(r.names)
}

// Len is how many secrets are redacted.
func (r *Redactor) Len() int {
	if r == nil {
		return 0
	}
	return len(r.names)
}
