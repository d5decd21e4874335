package secrets_test

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"

	"github.com/factline/factline/secrets"
)

// A secret added while the redactor is in use (an attempt's endpoint
// token) is redacted, with its encodings and in the log lines of a handler
// made before, until it is removed; the secrets it was made with stay.
func TestAddedSecretIsRedactedUntilRemoved(t *testing.T) {
	r := secrets.New(secrets.Secret{Name: "KEY", Value: "sk-live-123456"})
	var buf bytes.Buffer
	log := slog.New(secrets.NewHandler(slog.NewTextHandler(&buf, nil), r))
	token := "fl-0123456789abcdef"
	remove := r.Add(secrets.Secret{Name: "agent_token", Value: token})
	if got := r.Redact("a " + token + " b sk-live-123456"); got != "a [redacted:agent_token] b [redacted:KEY]" {
		t.Errorf("redacted %q", got)
	}
	if r.Len() != 2 || strings.Join(r.Names(), ",") != "KEY,agent_token" {
		t.Errorf("names %v", r.Names())
	}
	log.Info("token " + token)
	if strings.Contains(buf.String(), token) {
		t.Errorf("log line holds the added secret: %s", buf.String())
	}
	remove()
	remove() // twice is harmless
	if got := r.Redact(token + " sk-live-123456"); got != token+" [redacted:KEY]" {
		t.Errorf("after removal %q", got)
	}
	if r.Len() != 1 {
		t.Errorf("len %d after removal, want 1", r.Len())
	}
}

// Adding to a nil redactor does not panic: it redacts nothing and
// removing is harmless. Two additions of one name keep both values.
func TestAddOnNilAndTwice(t *testing.T) {
	var n *secrets.Redactor
	n.Add(secrets.Secret{Name: "x", Value: "12345678910"})()
	r := secrets.New()
	a := r.Add(secrets.Secret{Name: "agent_token", Value: "fl-aaaaaaaaaa"})
	b := r.Add(secrets.Secret{Name: "agent_token", Value: "fl-bbbbbbbbbb"})
	a()
	if got := r.Redact("fl-aaaaaaaaaa fl-bbbbbbbbbb"); got != "fl-aaaaaaaaaa [redacted:agent_token]" {
		t.Errorf("redacted %q", got)
	}
	b()
	if r.Len() != 0 {
		t.Errorf("len %d", r.Len())
	}
}
