package testutil

import "strings"

// DoubledPrefix returns the word a message repeats as a prefix ("nats:
// nats: …", "decode: decode: …"), or "" when none is repeated: what a
// wrapper that says its callee's prefix again leaves in an error.
func DoubledPrefix(msg string) string {
	isTok := func(c byte) bool {
		return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '.'
	}
	for i := 0; i < len(msg); i++ {
		if i > 0 && isTok(msg[i-1]) {
			continue
		}
		j := i
		for j < len(msg) && isTok(msg[j]) {
			j++
		}
		if j > i && strings.HasPrefix(msg[j:], ": "+msg[i:j]+": ") {
			return msg[i:j]
		}
	}
	return ""
}
