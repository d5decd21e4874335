// Package urlsecret hides the secrets a command line or a server URL may
// carry (a password or token in a URL's userinfo, the value of
// --password) wherever factline writes either down: error messages, the
// viewer's banner, a store's lock file.
package urlsecret

import (
	"net/url"
	"strings"
)

// Mask replaces a secret.
const Mask = "REDACTED"

// URL drops the secret written into a server URL or a comma-separated
// list of them: a password (user:password@) and a token (a lone name,
// token@, which nats.go sends as the token). A part that does not parse
// keeps no userinfo at all: whatever precedes its host is what was typed
// as the secret.
func URL(raw string) string {
	var out []string
	for _, part := range strings.Split(raw, ",") {
		u, err := url.Parse(strings.TrimSpace(part))
		if err != nil {
			out = append(out, unparsed(part))
			continue
		}
		if u.User == nil {
			out = append(out, part)
			continue
		}
		if _, has := u.User.Password(); has {
			u.User = url.UserPassword(u.User.Username(), Mask)
		} else {
			u.User = url.User(Mask)
		}
		out = append(out, u.String())
	}
	return strings.Join(out, ",")
}

// HasUserinfo reports whether any URL in raw carries a user, password or
// token of its own.
func HasUserinfo(raw string) bool {
	for _, part := range strings.Split(raw, ",") {
		if unparsed(part) != part {
			return true
		}
	}
	return false
}

// unparsed replaces the userinfo of a URL, parsed or not: from after the
// scheme to the last '@'. A server URL has no path, and a password that
// was not percent-encoded may hold '/', '?' or '#' (base64 does), so the
// last '@' of the whole part, not of what looks like the host, ends it.
func unparsed(part string) string {
	i := strings.Index(part, "://")
	if i < 0 {
		return part
	}
	start := i + len("://")
	at := strings.LastIndex(part[start:], "@")
	if at < 0 {
		return part
	}
	return part[:start] + Mask + part[start+at:]
}

// Args is a command line with its secrets masked: the value of
// --password (as the next argument or after '='), and the userinfo of
// every URL an argument holds, also inside SUITE@nats://… .
func Args(args []string) []string {
	out := make([]string, len(args))
	for i, a := range args {
		switch {
		case i > 0 && (args[i-1] == "--password" || args[i-1] == "-password"):
			a = Mask
		case strings.HasPrefix(a, "--password="):
			a = "--password=" + Mask
		default:
			a = unparsedAll(a)
		}
		out[i] = a
	}
	return out
}

// unparsedAll masks the userinfo of every URL in a, wherever in it the
// URL starts (SUITE@nats://u:p@h, --nats=nats://u:p@h, a list), as
// unparsed does: up to the last '@' before the next ','.
func unparsedAll(a string) string {
	var b strings.Builder
	for {
		i := strings.Index(a, "://")
		if i < 0 {
			b.WriteString(a)
			return b.String()
		}
		rest := a[i+len("://"):]
		end := strings.IndexByte(rest, ',')
		if end < 0 {
			end = len(rest)
		}
		authority := rest[:end]
		if at := strings.LastIndex(authority, "@"); at >= 0 {
			authority = Mask + authority[at:]
		}
		b.WriteString(a[:i+len("://")])
		b.WriteString(authority)
		a = rest[end:]
	}
}
