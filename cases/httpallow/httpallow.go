// Package httpallow is the http_call allowlist: a case's allow entries and
// the URLs a model asks to POST to, each parsed with the parser Go's HTTP
// client uses and compared by their parts, never as strings. A URL is
// allowed when its scheme, host and port are an entry's and its path
// starts with the entry's path, segment by segment. Anything that could be
// read two ways (userinfo, a percent-encoded host, a dot segment, an
// encoded slash) is refused rather than interpreted. Pure: no I/O.
package httpallow

import (
	"errors"
	"fmt"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
)

// ErrNotAllowed matches every refusal with errors.Is: a URL that does not
// parse, that is ambiguous, or that no entry allows.
var ErrNotAllowed = errors.New("URL not allowed")

// Error says why a URL (an allow entry or a call's) was refused.
type Error struct {
	URL    string
	Reason string
}

// Error renders the refusal as "<url>: <reason>".
func (e *Error) Error() string { return fmt.Sprintf("%s: %s", e.URL, e.Reason) }

// Is makes errors.Is(err, ErrNotAllowed) true.
func (e *Error) Is(target error) bool { return target == ErrNotAllowed }

func refuse(raw, format string, args ...any) error {
	return &Error{URL: raw, Reason: fmt.Sprintf(format, args...)}
}

// Endpoint is a URL in canonical parts: what is compared.
type Endpoint struct {
	// Scheme is http or https.
	Scheme string
	// Host is a lower-case DNS name or an IP address in its canonical
	// text form (IPv4 dotted quad, IPv6 as netip prints it, no brackets).
	Host string
	// Port is explicit: http's default 80 and https's 443 filled in.
	Port uint16
	// Path is the path's segments, percent-decoded, without the empty
	// segment of a trailing slash.
	Path []string
}

// String renders the endpoint as a URL (its path re-escaped).
func (e Endpoint) String() string {
	host := e.Host
	if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s://%s:%d", e.Scheme, host, e.Port)
	for _, s := range e.Path {
		b.WriteString("/" + url.PathEscape(s))
	}
	if len(e.Path) == 0 {
		b.WriteString("/")
	}
	return b.String()
}

// Covers reports whether a call to target is under the entry e: the same
// scheme, host and port, and a path that starts with e's, segment by
// segment (/api covers /api and /api/x, never /apix).
func (e Endpoint) Covers(target Endpoint) bool {
	if e.Scheme != target.Scheme || e.Host != target.Host || e.Port != target.Port || len(target.Path) < len(e.Path) {
		return false
	}
	for i, s := range e.Path {
		if target.Path[i] != s {
			return false
		}
	}
	return true
}

// ParseEntry parses an allow entry: an http or https URL with a host,
// an optional port and an optional path, and nothing else (no userinfo,
// query or fragment).
func ParseEntry(raw string) (Endpoint, error) {
	u, err := parse(raw)
	if err != nil {
		return Endpoint{}, err
	}
	if u.RawQuery != "" || u.ForceQuery {
		return Endpoint{}, refuse(raw, "an allow entry has no query: it allows a path, and every query on it")
	}
	return canonical(raw, u)
}

// ParseTarget parses the URL of a call: like an entry, except that it may
// carry a query (it is sent, and plays no part in the comparison).
func ParseTarget(raw string) (Endpoint, error) {
	u, err := parse(raw)
	if err != nil {
		return Endpoint{}, err
	}
	return canonical(raw, u)
}

// List is a case's allow entries, parsed.
type List []Endpoint

// ParseList parses allow entries; the error names the first bad one by
// its index.
func ParseList(raws []string) (List, error) {
	l := make(List, 0, len(raws))
	for i, raw := range raws {
		e, err := ParseEntry(raw)
		if err != nil {
			return nil, fmt.Errorf("entry %d: %w", i, err)
		}
		l = append(l, e)
	}
	return l, nil
}

// Check says whether a call may go to raw: nil when an entry covers it,
// otherwise an *Error saying why not.
func (l List) Check(raw string) error {
	t, err := ParseTarget(raw)
	if err != nil {
		return err
	}
	for _, e := range l {
		if e.Covers(t) {
			return nil
		}
	}
	if read := t.String(); read != raw {
		// The URL as it was read (a host in lower case, a default port
		// made explicit) is what the entries did not cover.
		return refuse(raw, "no allow entry covers it (read as %s)", read)
	}
	return refuse(raw, "no allow entry covers it")
}

// parse reads raw with net/url (the parser http.NewRequest uses, so that
// what is checked is what is dialled) and refuses the forms an entry or a
// call never needs.
func parse(raw string) (*url.URL, error) {
	if raw == "" {
		return nil, refuse(raw, "empty URL")
	}
	if strings.Contains(raw, "\\") {
		// Browsers and some servers read a backslash as a slash.
		return nil, refuse(raw, "a backslash is ambiguous in a URL")
	}
	if i := strings.Index(raw, "://"); i >= 0 && strings.Contains(authority(raw[i+3:]), "%") {
		// net/url decodes some escapes in a host and refuses others; a
		// host has one spelling here.
		return nil, refuse(raw, "a percent-encoded host (or userinfo, or IPv6 zone) is refused")
	}
	u, err := url.Parse(raw)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return nil, refuse(raw, "does not parse: %v", err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return nil, refuse(raw, "the scheme must be http or https")
	}
	if u.Opaque != "" || !strings.HasPrefix(raw[len(u.Scheme)+1:], "//") {
		return nil, refuse(raw, "no host: write %s://host[:port]/path", u.Scheme)
	}
	if u.User != nil {
		return nil, refuse(raw, "userinfo (user@) is refused: the host is what follows the @")
	}
	if u.Fragment != "" || strings.Contains(raw, "#") {
		return nil, refuse(raw, "a fragment (#…) is refused: it is never sent")
	}
	return u, nil
}

// canonical turns a parsed URL into its Endpoint, refusing ambiguous hosts
// and paths.
func canonical(raw string, u *url.URL) (Endpoint, error) {
	e := Endpoint{Scheme: u.Scheme}
	// parse made sure raw starts with the scheme and "://".
	host, err := canonicalHost(u.Hostname(), strings.HasPrefix(authority(raw[len(u.Scheme)+3:]), "["))
	if err != nil {
		return e, refuse(raw, "%v", err)
	}
	e.Host = host
	if e.Port, err = port(u); err != nil {
		return e, refuse(raw, "%v", err)
	}
	if e.Path, err = segments(u.EscapedPath()); err != nil {
		return e, refuse(raw, "%v", err)
	}
	return e, nil
}

// authority is the authority of a URL as written, from the text after
// "scheme://".
func authority(rest string) string {
	if i := strings.IndexAny(rest, "/?#"); i >= 0 {
		return rest[:i]
	}
	return rest
}

// canonicalHost is a host in one spelling: an IP literal as netip prints
// it (an IPv4-mapped IPv6 address as its IPv4 address, which is where Go
// dials it), a name in lower case. Names are limited to letters, digits,
// '-', '_' and '.', with no empty label, so that no two spellings reach
// the same name through IDNA mapping, a trailing dot or a search domain.
func canonicalHost(h string, bracketed bool) (string, error) {
	if h == "" {
		return "", errors.New("no host")
	}
	if a, err := netip.ParseAddr(h); err == nil {
		if a.Zone() != "" {
			return "", errors.New("an IPv6 zone is refused")
		}
		if bracketed != a.Is6() {
			return "", errors.New("an IPv6 address goes in brackets, an IPv4 address does not")
		}
		return a.Unmap().String(), nil
	}
	if bracketed {
		return "", fmt.Errorf("%q in brackets is not an IPv6 address", h)
	}
	h = strings.ToLower(h)
	if strings.HasSuffix(h, ".") {
		return "", errors.New("a host with a trailing dot is refused: write it without")
	}
	labels := strings.Split(h, ".")
	for _, l := range labels {
		if l == "" {
			return "", fmt.Errorf("host %q has an empty label", h)
		}
		for _, c := range l {
			if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
				return "", fmt.Errorf("host %q: only letters, digits, '-', '_' and '.' (write an international name in its xn-- form)", h)
			}
		}
	}
	if numeric(labels[len(labels)-1]) {
		// 127.1, 0x7f.0.0.1, 2130706433, 0177.0.0.1: resolvers read these
		// as IPv4 addresses in forms netip does not; only the dotted quad
		// is one spelling.
		return "", fmt.Errorf("host %q is neither a name nor an IP address in dotted-quad form", h)
	}
	return h, nil
}

// numeric says a label is a number (decimal, or hex with 0x), which makes
// the host an IPv4 address to a resolver, not a name.
func numeric(l string) bool {
	if strings.HasPrefix(l, "0x") {
		l = l[2:]
		if l == "" {
			return true
		}
		return strings.Trim(l, "0123456789abcdef") == ""
	}
	return strings.Trim(l, "0123456789") == ""
}

// port is the URL's port, the scheme's default when it names none.
func port(u *url.URL) (uint16, error) {
	p := u.Port()
	if p == "" {
		if u.Scheme == "https" {
			return 443, nil
		}
		return 80, nil
	}
	n, err := strconv.ParseUint(p, 10, 16)
	if err != nil || n == 0 {
		return 0, fmt.Errorf("port %q is not 1 to 65535", p)
	}
	return uint16(n), nil
}

// segments splits an escaped path into its decoded segments. A segment
// that a server could read as another path is refused: "." and ".." (also
// percent-encoded, also before a ';' parameter), an encoded '/' or '\', a
// control character, and an empty segment anywhere but at the end.
func segments(escaped string) ([]string, error) {
	if escaped == "" || escaped == "/" {
		return nil, nil
	}
	if !strings.HasPrefix(escaped, "/") {
		return nil, fmt.Errorf("path %q does not start with /", escaped)
	}
	parts := strings.Split(escaped[1:], "/")
	if parts[len(parts)-1] == "" {
		parts = parts[:len(parts)-1]
	}
	out := make([]string, 0, len(parts))
	for _, p := range parts {
		s, err := url.PathUnescape(p)
		if err != nil {
			return nil, fmt.Errorf("path segment %q: %v", p, err)
		}
		base, _, _ := strings.Cut(s, ";")
		switch {
		case s == "":
			return nil, fmt.Errorf("path %q has an empty segment (//)", escaped)
		case base == "." || base == "..":
			return nil, fmt.Errorf("path %q has a dot segment (%q): write the path it means", escaped, p)
		case strings.ContainsAny(s, "/\\"):
			return nil, fmt.Errorf("path segment %q holds an encoded slash or backslash", p)
		case strings.IndexFunc(s, func(r rune) bool { return r < 0x20 || r == 0x7f }) >= 0:
			return nil, fmt.Errorf("path segment %q holds a control character", p)
		}
		out = append(out, s)
	}
	return out, nil
}
