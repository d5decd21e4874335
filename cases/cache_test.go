package cases

import (
	"errors"
	"strings"
	"testing"
)

// A treatment's response cache is off unless it says otherwise; a mode
// that is not one of the three is refused naming the file and the field,
// and a treatment without a cache encodes as it did before caches existed
// (its digest, and so its agent identity, is unchanged).
func TestTreatmentCacheMode(t *testing.T) {
	plain, err := ParseTreatment("t.yaml", []byte("id: t\nmodel: {provider: openai, name: m}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if got := plain.CacheMode(); got != CacheOff {
		t.Fatalf("default cache mode %q, want %q", got, CacheOff)
	}
	if b, _ := plain.Encode(); strings.Contains(string(b), "cache") {
		t.Fatalf("a treatment without a cache encodes one: %s", b)
	}
	for _, mode := range []string{CacheReadWrite, CacheRead, CacheOff} {
		tr, err := ParseTreatment("t.yaml", []byte("id: t\nmodel: {provider: openai, name: m}\ncache: {mode: "+mode+"}\n"))
		if err != nil {
			t.Fatalf("mode %s: %v", mode, err)
		}
		data, _ := tr.Encode()
		back, err := DecodeTreatment(data)
		if err != nil || back.CacheMode() != mode {
			t.Fatalf("mode %s: stored round trip gives %v, %v", mode, back, err)
		}
	}
	for _, c := range []struct{ yaml, want string }{
		{"id: t\nmodel: {provider: openai, name: m}\ncache: {mode: write}\n", `t.yaml:3: cache.mode: unknown cache mode "write" (want read_write, read or off)`},
		{"id: t\nmodel: {provider: openai, name: m}\ncache: {}\n", `t.yaml:3: cache.mode: required`},
		{"id: t\nmodel: {provider: openai, name: m}\ncache: {mode: read, ttl: 1h}\n", "ttl"},
	} {
		_, err := ParseTreatment("t.yaml", []byte(c.yaml))
		if err == nil || !errors.Is(err, ErrInvalid) && !strings.Contains(err.Error(), "ttl") || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: got %v, want %q", c.yaml, err, c.want)
		}
	}
}
