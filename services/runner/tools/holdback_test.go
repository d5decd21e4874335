package tools

import (
	"strings"
	"testing"
)

// HoldBackAtCuts moves the bytes it is told to hold back next to a cut
// mark into the mark's count, at either end, and leaves an output
// without marks as it is.
func TestHoldBackAtCuts(t *testing.T) {
	held := func(part string) func(string) int {
		return func(s string) int {
			if strings.HasSuffix(s, part) || strings.HasPrefix(s, part) {
				return len(part)
			}
			return 0
		}
	}
	none := func(string) int { return 0 }
	for _, c := range []struct{ in, want string }{
		{"abcSEC\n[output cut: 10 more bytes not shown]", "abc\n[output cut: 13 more bytes not shown]"},
		{"[output cut: 7 earlier bytes not shown]\nSECabc", "[output cut: 10 earlier bytes not shown]\nabc"},
		{"abcSEC\n[output cut: at least 10 more bytes not shown]", "abc\n[output cut: at least 13 more bytes not shown]"},
		{"abcSEC", "abcSEC"},
		{"abc\n[output cut: 10 more bytes not shown]", "abc\n[output cut: 10 more bytes not shown]"},
	} {
		if got := HoldBackAtCuts(c.in, held("SEC"), held("SEC")); got != c.want {
			t.Errorf("HoldBackAtCuts(%q) = %q, want %q", c.in, got, c.want)
		}
	}
	if got := HoldBackAtCuts("xSEC\n[output cut: 1 more bytes not shown]", none, none); got != "xSEC\n[output cut: 1 more bytes not shown]" {
		t.Errorf("nothing to hold back changed the output: %q", got)
	}
}
