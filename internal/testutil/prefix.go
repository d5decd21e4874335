package testutil

import "strings"

// DoubledPrefix returns the prefix a message repeats ("nats: nats: …",
// "decode: decode: …", "factline suite pause: factline suite pause demo:
// …"), or "" when none is repeated: what a wrapper that says its callee's
// prefix again leaves in an error. A prefix is the text from the start of
// a word up to the next ": ", said again right after it, whole, as a
// prefix of its own or as the first words of the next one.
func DoubledPrefix(msg string) string {
	isTok := func(c byte) bool {
		return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '.'
	}
	for i := 0; i < len(msg); i++ {
		if !isTok(msg[i]) || i > 0 && isTok(msg[i-1]) {
			continue
		}
		k := strings.Index(msg[i:], ": ")
		if k <= 0 {
			return ""
		}
		p := msg[i : i+k]
		if strings.ContainsAny(p, ":\n") {
			continue
		}
		rest := msg[i+k+2:]
		if strings.HasPrefix(rest, p) && (len(rest) == len(p) || rest[len(p)] == ':' || rest[len(p)] == ' ') {
			return p
		}
	}
	return ""
}
