package cases

import (
	"strings"
	"testing"
)

// Limits that admit nothing, are not whole counts, or name a key nobody
// reads are refused, naming the field (and the line).
func TestModelLimitsBadInputNamesTheField(t *testing.T) {
	for _, c := range []struct{ yaml, want string }{
		{"id: t\nmodel: {provider: openai, name: m, limits: {max_concurrent: 0}}\n", "model.limits.max_concurrent: want a whole number of at least 1, got 0"},
		{"id: t\nmodel: {provider: openai, name: m, limits: {max_concurrent: -2}}\n", "model.limits.max_concurrent: want a whole number of at least 1, got -2"},
		{"id: t\nmodel: {provider: openai, name: m, limits: {max_requests_per_minute: 0}}\n", "model.limits.max_requests_per_minute: want a whole number of at least 1, got 0"},
		{"id: t\nmodel: {provider: openai, name: m, limits: {max_concurrent: 1.5}}\n", "max_concurrent"},
		{"id: t\nmodel: {provider: openai, name: m, limits: {max_requests_per_minute: 2.5}}\n", "max_requests_per_minute"},
		{"id: t\nmodel: {provider: openai, name: m, limits: {max_connections: 2}}\n", "max_connections"},
		{"id: t\nmodel: {provider: openai, name: m, limits: {}}\n", "model.limits: set max_concurrent or max_requests_per_minute"},
	} {
		_, err := ParseTreatment("t.yaml", []byte(c.yaml))
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "t.yaml") {
			t.Errorf("%q: got %v, want an error of t.yaml naming %q", c.yaml, err, c.want)
		}
	}
}

// Limits travel with the stored treatment; a treatment without them
// stores none (its digest is what it was).
func TestModelLimitsRoundTrip(t *testing.T) {
	tr, err := ParseTreatment("t.yaml", []byte("id: t\nmodel: {provider: openai, name: m, limits: {max_concurrent: 2, max_requests_per_minute: 60}}\n"))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := tr.Encode()
	back, err := DecodeTreatment(b)
	if err != nil || *back.Model.Limits.MaxConcurrent != 2 || *back.Model.Limits.MaxRequestsPerMinute != 60 {
		t.Fatalf("round trip: %+v %v", back, err)
	}
	plain, _ := ParseTreatment("t.yaml", []byte("id: t\nmodel: {provider: openai, name: m}\n"))
	if b, _ := plain.Encode(); strings.Contains(string(b), "limits") {
		t.Fatalf("a treatment without limits encodes them: %s", b)
	}
}
