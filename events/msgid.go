package events

import "strings"

// MessageID is the deduplication ID of a fact its writer derives from what
// the fact answers, so that a redelivered input or a retried append never
// commits it twice: "<run>/<kind>/<part>/…". The kind names the namespace:
// it is the fact's own kind, a word of factline's closed vocabulary that no
// user chooses, and each kind has one shape of parts. Every part (and the
// run) is escaped so that it never holds the separator: a name a user or a
// model chose (a call ID, an instrument, a control ID) can neither reach
// another kind's namespace nor another fact's parts. Distinct (run, kind,
// parts) give distinct IDs. The bus scopes IDs by suite on the wire.
func MessageID(run string, kind Kind, parts ...string) string {
	var b strings.Builder
	b.WriteString(escapeIDPart(run))
	b.WriteByte('/')
	b.WriteString(string(kind))
	for _, p := range parts {
		b.WriteByte('/')
		b.WriteString(escapeIDPart(p))
	}
	return b.String()
}

// escapeIDPart percent-escapes the separator and the escape character, and
// marks an empty part, so that joining parts is reversible.
func escapeIDPart(s string) string {
	if s == "" {
		return "%00"
	}
	if !strings.ContainsAny(s, "/%") {
		return s
	}
	var b strings.Builder
	for i := range len(s) {
		switch s[i] {
		case '/':
			b.WriteString("%2F")
		case '%':
			b.WriteString("%25")
		default:
			b.WriteByte(s[i])
		}
	}
	return b.String()
}
