package secrets_test

import (
	"encoding/hex"
	"testing"

	"github.com/factline/factline/secrets"
)

// Text cut in the middle of a secret shows part of it; PartialEnd and
// PartialStart measure that part, in the value's encodings too, and
// nothing else.
func TestPartialSecretAtACut(t *testing.T) {
	const v = "sk-live-0f3b8c2d9e4a7b61"
	r := secrets.New(secrets.Secret{Name: "K", Value: v})
	// -1: not asked.
	for _, c := range []struct {
		text       string
		end, start int
	}{
		{"output: sk-live-", 8, 0},
		{"output: s", 1, 0},
		{"output: " + hex.EncodeToString([]byte(v))[:10], 10, 0},
		{"7b61 and then", 0, 4},
		{v[:len(v)-1], len(v) - 1, -1},
		{v[1:], -1, len(v) - 1},
		{"nothing here", 0, 0},
		{"", 0, 0},
	} {
		if got := r.PartialEnd(c.text); c.end >= 0 && got != c.end {
			t.Errorf("PartialEnd(%q) = %d, want %d", c.text, got, c.end)
		}
		if got := r.PartialStart(c.text); c.start >= 0 && got != c.start {
			t.Errorf("PartialStart(%q) = %d, want %d", c.text, got, c.start)
		}
	}
	var none *secrets.Redactor
	if none.PartialEnd("sk-live-") != 0 || none.PartialStart("7b61") != 0 {
		t.Error("a nil redactor holds something back")
	}
}
