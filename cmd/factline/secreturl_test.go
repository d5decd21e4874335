package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/factline/factline/internal/testutil"
)

// A NATS URL carries a secret in two forms: user:password@ and, with no
// password, token@ (nats.go sends a lone user name as the token). Neither
// may be shown, and neither may an URL that does not parse, whose
// userinfo is still the secret the operator typed.
func TestRedactURLHidesTokensAndUnparsableUserinfo(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ in, want, secret string }{
		{"nats://runner:s3cretpw@127.0.0.1:4222", "nats://runner:REDACTED@127.0.0.1:4222", "s3cretpw"},
		{"tls://t0kenSecret@h:1", "tls://REDACTED@h:1", "t0kenSecret"},
		{"nats://127.0.0.1:4222", "nats://127.0.0.1:4222", ""},
		{"nats://runner:bad secret@127.0.0.1:1", "nats://REDACTED@127.0.0.1:1", "bad secret"},
		{"nats://runner:50%zz@127.0.0.1:1", "nats://REDACTED@127.0.0.1:1", "50%zz"},
		{"nats://a:pw1secret@h:1,nats://tok2secret@h:2", "nats://a:REDACTED@h:1,nats://REDACTED@h:2", "secret"},
	} {
		got := redactURL(c.in)
		if got != c.want || (c.secret != "" && strings.Contains(got, c.secret)) {
			t.Errorf("redactURL(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

// Every command that names its server names it without the secret a URL
// holds: the viewer's banner, and a refused or unparsable URL's error.
func TestCommandsNeverPrintTheSecretOfAServerURL(t *testing.T) {
	dir := t.TempDir()
	const password, token = "url-password-7f3a9c", "url-token-51be0d"
	conf := "accounts {\n  T: {\n    jetstream: enabled\n    users: [ {user: admin, password: $T_URL_PASSWORD} ]\n  }\n}\n"
	t.Setenv("T_URL_PASSWORD", `"`+password+`"`)
	t.Setenv(PasswordEnv, "")
	srv := serveConfig(t, dir, conf)
	host := strings.TrimPrefix(srv.ClientURL(), "nats://")
	withPassword := "nats://admin:" + password + "@" + host
	if code, _, errOut := runCLI(t, "setup", "--nats", withPassword); code != 0 {
		t.Fatalf("setup with the password in the URL: exit %d: %s", code, errOut)
	}

	// The viewer says where it reads from.
	vctx, vcancel := context.WithCancel(context.Background())
	var out, errOut testutil.LogBuffer
	done := make(chan int, 1)
	go func() {
		done <- run(vctx, []string{"view", "--listen", "127.0.0.1:0", "--nats", withPassword}, &out, &errOut)
	}()
	deadline := time.Now().Add(time.Minute)
	for !viewURL.MatchString(out.String()) {
		select {
		case code := <-done:
			vcancel()
			t.Fatalf("view exited %d: %s%s", code, out.String(), errOut.String())
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			vcancel()
			t.Fatalf("view never said where it serves: %q", out.String())
		}
	}
	vcancel()
	<-done
	if said := out.String() + errOut.String(); strings.Contains(said, password) || !strings.Contains(said, "admin:REDACTED@") {
		t.Errorf("view printed %q: the URL's password shown, or the URL not named", said)
	}

	for _, c := range []struct{ url, secret string }{
		{"nats://" + token + "@" + host, token},                        // refused: a token the server does not know
		{"nats://admin:" + password + " x@" + host, password},          // does not parse
		{"nats://admin:" + password + "%zz@" + host, password + "%zz"}, // does not parse
	} {
		code, out, errOut := runCLI(t, "report", "s1", "--nats", c.url)
		// A URL that carries a credential is not told it lacks one.
		if code == 0 || strings.Contains(out+errOut, c.secret) || !strings.Contains(errOut, host) || strings.Contains(errOut, "requires a credential") ||
			strings.Contains(errOut, "no credentials") {
			t.Errorf("report --nats with a secret in a URL: exit %d, printed %q%q", code, out, errOut)
		}
	}
}
