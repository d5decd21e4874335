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
	"sync"
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
	mu sync.RWMutex
	// base are the secrets it was made with; added those Add registered,
	// by registration, until removed.
	base  []Secret
	added map[uint64][]Secret
	next  uint64
	// names, forms and replacer are built from base and added; forms are
	// every text replaced (the values and their encodings).
	names    []string
	forms    []string
	replacer *strings.Replacer
}

// Marker is what stands in for the secret named name.
func Marker(name string) string { return "[redacted:" + name + "]" }

// New returns a redactor of the given secrets. Values shorter than MinLen
// are ignored. When one value contains another, the longer one wins.
func New(secrets ...Secret) *Redactor {
	r := &Redactor{base: slices.Clone(secrets)}
	r.build()
	return r
}

// Add registers more secrets, redacted from then on (also by the log
// handlers made over r) until the returned function is called; calling it
// again does nothing. It is for secrets that live shorter than the
// redactor, such as an attempt's endpoint token. On a nil redactor it
// does nothing.
func (r *Redactor) Add(secrets ...Secret) (remove func()) {
	if r == nil {
		return func() {}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.added == nil {
		r.added = map[uint64][]Secret{}
	}
	id := r.next
	r.next++
	r.added[id] = slices.Clone(secrets)
	r.build()
	var once sync.Once
	return func() {
		once.Do(func() {
			r.mu.Lock()
			defer r.mu.Unlock()
			delete(r.added, id)
			r.build()
		})
	}
}

// build makes names and the replacer from every secret held; the caller
// holds the lock (or is New).
func (r *Redactor) build() {
	type pair struct{ old, new string }
	var pairs []pair
	r.forms = nil
	seen := map[string]bool{}
	names := map[string]bool{}
	all := slices.Clone(r.base)
	ids := make([]uint64, 0, len(r.added))
	for id := range r.added {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		all = append(all, r.added[id]...)
	}
	for _, s := range all {
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
			r.forms = append(r.forms, form)
		}
	}
	r.names = r.names[:0]
	for n := range names {
		r.names = append(r.names, n)
	}
	slices.Sort(r.names)
	r.replacer = nil
	if len(pairs) == 0 {
		return
	}
	// strings.Replacer takes the first listed match at a position: longest
	// first, so a secret containing another is replaced whole.
	slices.SortStableFunc(pairs, func(a, b pair) int { return len(b.old) - len(a.old) })
	args := make([]string, 0, 2*len(pairs))
	for _, p := range pairs {
		args = append(args, p.old, p.new)
	}
	r.replacer = strings.NewReplacer(args...)
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
	if r == nil || s == "" {
		return s
	}
	r.mu.RLock()
	rep := r.replacer
	r.mu.RUnlock()
	if rep == nil {
		return s
	}
	return rep.Replace(s)
}

// PartialEnd is how many bytes at the end of s begin a secret (or one of
// its encodings) without completing it: the longest suffix of s that is a
// proper prefix of one. Text cut right after s shows that part of a
// secret, which Redact, looking for whole values, leaves as it is; whoever
// cuts text holds those bytes back too.
func (r *Redactor) PartialEnd(s string) int {
	return r.partial(s, func(form string, n int) bool { return strings.HasSuffix(s, form[:n]) })
}

// PartialStart is how many bytes at the start of s end a secret (or one of
// its encodings) that began before it: the longest prefix of s that is a
// proper suffix of one. It is PartialEnd for text cut right before s.
func (r *Redactor) PartialStart(s string) int {
	return r.partial(s, func(form string, n int) bool { return strings.HasPrefix(s, form[len(form)-n:]) })
}

// partial is the largest n below a form's length and at most len(s) for
// which part(form, n) holds, over every form.
func (r *Redactor) partial(s string, part func(form string, n int) bool) int {
	if r == nil || s == "" {
		return 0
	}
	r.mu.RLock()
	forms := r.forms
	r.mu.RUnlock()
	most := 0
	for _, f := range forms {
		for n := min(len(f)-1, len(s)); n > most; n-- {
			if part(f, n) {
				most = n
				break
			}
		}
	}
	return most
}

// Names lists the names of the secrets redacted, sorted.
func (r *Redactor) Names() []string {
	if r == nil {
		return nil
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	return slices.Clone(r.names)
}

// Len is how many secrets are redacted.
func (r *Redactor) Len() int {
	if r == nil {
		return 0
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	return len(r.names)
}
