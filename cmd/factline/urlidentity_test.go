package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The NATS client takes a user, password or token written into the URL
// over --user, --nkey and --creds, without a word: 'serve --nats
// nats://admin:…@host --user runner' ran as admin, and its permission
// errors named the runner. Both at once is a mistake in the call.
func TestAURLThatCarriesAnIdentityTakesNoIdentityFlag(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	pw := filepath.Join(dir, "pw")
	if err := os.WriteFile(pw, []byte("flag-pw-4d2a\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		url  string
		flag []string
	}{
		{"nats://admin:url-pw-88c1@127.0.0.1:1", []string{"--user", "runner", "--password-file", pw}},
		{"nats://url-token-11f0@127.0.0.1:1", []string{"--nkey", pw}},
		{"nats://127.0.0.1:1,nats://admin:url-pw-88c1@127.0.0.1:2", []string{"--creds", pw}},
	} {
		args := append([]string{"tail", "--no-follow", "--nats", c.url}, c.flag...)
		code, out, errOut := runCLI(t, args...)
		if code != 2 || out != "" || !strings.Contains(errOut, c.flag[0]) || !strings.Contains(errOut, "carries its own") {
			t.Errorf("factline %s: exit %d, stdout %q, stderr %q; want exit 2 naming the URL and %s", strings.Join(args, " "), code, out, errOut, c.flag[0])
		}
		for _, secret := range []string{"url-pw-88c1", "url-token-11f0", "flag-pw-4d2a"} {
			if strings.Contains(out+errOut, secret) {
				t.Errorf("factline %s printed %s: %q", strings.Join(args, " "), secret, errOut)
			}
		}
	}
}
