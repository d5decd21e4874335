package urlsecret

import (
	"strings"
	"testing"
)

func TestURLHidesPasswordsTokensAndWhatDoesNotParse(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ in, want string }{
		{"nats://runner:s3cretpw@127.0.0.1:4222", "nats://runner:REDACTED@127.0.0.1:4222"},
		{"tls://t0kenSecret@h:1", "tls://REDACTED@h:1"},
		{"nats://127.0.0.1:4222", "nats://127.0.0.1:4222"},
		{"nats://runner:bad secret@127.0.0.1:1", "nats://REDACTED@127.0.0.1:1"},
		{"nats://runner:50%zz@127.0.0.1:1", "nats://REDACTED@127.0.0.1:1"},
		{"nats://runner:k9/X+aZ#q?@127.0.0.1:1", "nats://REDACTED@127.0.0.1:1"},
		{"nats://a:pw1secret@h:1,nats://tok2secret@h:2", "nats://a:REDACTED@h:1,nats://REDACTED@h:2"},
	} {
		if got := URL(c.in); got != c.want {
			t.Errorf("URL(%q) = %q, want %q", c.in, got, c.want)
		}
	}
	if HasUserinfo("nats://h:1,tls://h:2") || !HasUserinfo("nats://h:1,tls://tok@h:2") {
		t.Error("HasUserinfo tells URLs with userinfo from those without wrongly")
	}
}

func TestArgsHidesPasswordsAndURLSecrets(t *testing.T) {
	t.Parallel()
	in := []string{"factline", "compare", "demo@/srv/st", "demo@nats://an:pw-one/x@h:1", "--password", "pw-two",
		"--password=pw-three", "--nats=nats://tok-four@h:2,nats://u:pw-five@h:3", "--user", "runner", "fact.>"}
	got := strings.Join(Args(in), " ")
	for _, secret := range []string{"pw-one", "pw-two", "pw-three", "tok-four", "pw-five"} {
		if strings.Contains(got, secret) {
			t.Errorf("Args kept %s: %s", secret, got)
		}
	}
	for _, kept := range []string{"factline compare demo@/srv/st demo@nats://REDACTED@h:1", "--user runner fact.>", "--nats=nats://REDACTED@h:2,nats://REDACTED@h:3"} {
		if !strings.Contains(got, kept) {
			t.Errorf("Args = %s, want it to keep %q", got, kept)
		}
	}
}
