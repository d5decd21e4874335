package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nkeys"

	"github.com/factline/factline/bus"
)

func TestCredentialFlags(t *testing.T) {
	dir := t.TempDir()
	pwFile := filepath.Join(dir, "pw")
	if err := os.WriteFile(pwFile, []byte("s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	empty := filepath.Join(dir, "empty")
	if err := os.WriteFile(empty, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv(PasswordEnv, "")
	for _, c := range []struct {
		name    string
		cred    credentials
		env     string
		wantErr string
	}{
		{"user with a password file", credentials{user: "runner", passwordFile: pwFile}, "", ""},
		{"user with the environment", credentials{user: "runner"}, "from-env", ""},
		{"user with no password", credentials{user: "runner"}, "", "needs a password"},
		{"empty password file", credentials{user: "runner", passwordFile: empty}, "", "is empty"},
		{"missing password file", credentials{user: "runner", passwordFile: filepath.Join(dir, "nope")}, "", "--password-file"},
		{"both password flags", credentials{user: "runner", password: "x", passwordFile: pwFile}, "", "not both"},
		{"password without user", credentials{passwordFile: pwFile}, "", "needs --user"},
		{"two methods", credentials{user: "runner", passwordFile: pwFile, creds: pwFile}, "", "one of"},
		{"missing creds file", credentials{creds: filepath.Join(dir, "nope.creds")}, "", "--creds"},
		{"certificate without key", credentials{tlsCert: pwFile}, "", "go together"},
		{"bad nkey seed", credentials{nkey: pwFile}, "", "--nkey"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Setenv(PasswordEnv, c.env)
			_, err := c.cred.options()
			switch {
			case c.wantErr == "" && err != nil:
				t.Fatalf("options: %v", err)
			case c.wantErr != "" && (err == nil || !strings.Contains(err.Error(), c.wantErr)):
				t.Fatalf("options: %v, want an error about %q", err, c.wantErr)
			case c.wantErr != "" && !errors.As(err, new(usageError)) && !errors.As(err, new(fileError)):
				t.Fatalf("options: %T is neither a usage error nor a file error", err)
			}
		})
	}
	pw, err := (&credentials{user: "runner", passwordFile: pwFile}).readPassword()
	if err != nil || pw != "s3cret" {
		t.Fatalf("password from file = %q, %v", pw, err)
	}
}

func TestRedactURL(t *testing.T) {
	t.Parallel()
	got := redactURL("nats://runner:s3cret@127.0.0.1:4222, nats://127.0.0.1:4223,tls://token@h:1")
	if strings.Contains(got, "s3cret") || !strings.Contains(got, "runner:REDACTED@127.0.0.1:4222") || !strings.Contains(got, "tls://REDACTED@h:1") || strings.Contains(got, "token") {
		t.Fatalf("redactURL = %q", got)
	}
}

func TestPermissionViolationIsNamed(t *testing.T) {
	t.Parallel()
	var got error
	g := newGuard("user runner", func(err error) { got = err })
	g.handle(nil, nil, fmt.Errorf(`%w: Permissions Violation for Publish to "fact.s.r.grade.verdict"`, nats.ErrPermissionViolation))
	var pe *PermissionError
	if !errors.As(got, &pe) || pe.Subject != "fact.s.r.grade.verdict" || pe.Op != "publish" || pe.Identity != "user runner" {
		t.Fatalf("violation became %#v", got)
	}
	if g.deniedFor("fact.s.r.grade.verdict") == nil {
		t.Fatal("violation not recorded")
	}
	g.handle(nil, nil, fmt.Errorf(`%w: Permissions Violation for Publish to "$JS.API.STREAM.CREATE.FACTS"`, nats.ErrPermissionViolation))
	if !errors.As(got, &pe) || !strings.Contains(pe.Error(), "factline setup") {
		t.Fatalf("a refused stream create does not point at setup: %v", got)
	}
}

// tlsFiles makes a CA, a server certificate for 127.0.0.1 and a client
// certificate, all signed by the CA, as PEM files in dir.
func tlsFiles(t *testing.T, dir string) (ca, serverCert, serverKey, clientCert, clientKey string) {
	t.Helper()
	caKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "factline test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	caCert, _ := x509.ParseCertificate(caDER)
	write := func(name, typ string, der []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	leaf := func(serial int64, name string, usage x509.ExtKeyUsage) (string, string) {
		key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		tmpl := &x509.Certificate{SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: name},
			NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
			KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{usage},
			IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, caCert, &key.PublicKey, caKey)
		if err != nil {
			t.Fatal(err)
		}
		kder, _ := x509.MarshalECPrivateKey(key)
		return write(name+".pem", "CERTIFICATE", der), write(name+"-key.pem", "EC PRIVATE KEY", kder)
	}
	ca = write("ca.pem", "CERTIFICATE", caDER)
	serverCert, serverKey = leaf(2, "server", x509.ExtKeyUsageServerAuth)
	clientCert, clientKey = leaf(3, "client", x509.ExtKeyUsageClientAuth)
	return
}

// serveConfig starts a server on loopback with the configuration conf,
// written to dir/server.conf beside the files it includes, until the test
// ends.
func serveConfig(t *testing.T, dir, conf string) *bus.Embedded {
	t.Helper()
	confFile := filepath.Join(dir, "server.conf")
	if err := os.WriteFile(confFile, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	srv, err := bus.StartEmbedded(ctx, bus.EmbeddedConfig{StoreDir: filepath.Join(dir, "store"), Durability: bus.SyncInterval,
		Listen: "127.0.0.1:-1", ConfigFile: confFile})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Shutdown)
	return srv
}

// The credential flags against a real server that demands mutual TLS: an
// admin sets the account up with a password from a file, an analyst reads
// with an nkey seed, a wrong password is refused without being echoed, and
// a client that cannot verify the server does not connect.
func TestConnectWithCredentialsAndTLS(t *testing.T) {
	dir := t.TempDir()
	ca, sCert, sKey, cCert, cKey := tlsFiles(t, dir)
	roles, err := os.ReadFile(filepath.Join("..", "..", "ops", "nats", "roles.conf"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "roles.conf"), roles, 0o600); err != nil {
		t.Fatal(err)
	}
	kp, err := nkeys.CreateUser()
	if err != nil {
		t.Fatal(err)
	}
	pub, _ := kp.PublicKey()
	seed, _ := kp.Seed()
	seedFile := filepath.Join(dir, "analyst.nk")
	if err := os.WriteFile(seedFile, append(seed, '\n'), 0o600); err != nil { // as nkeygen writes it
		t.Fatal(err)
	}
	// nats-server refuses a top-level variable nobody uses: every role of
	// roles.conf gets a user.
	others := ""
	for _, r := range []string{"SUBMITTER", "RUNNER", "STALLER", "DECIDER", "GRADER", "METER", "OPS"} {
		others += "      {user: " + strings.ToLower(r) + ", password: $T_ADMIN_PASSWORD, permissions: $" + r + "}\n"
	}
	conf := `include ./roles.conf
tls { cert_file: "` + sCert + `", key_file: "` + sKey + `", ca_file: "` + ca + `", verify: true }
accounts {
  T: {
    jetstream: enabled
    users: [
      {user: admin, password: $T_ADMIN_PASSWORD, permissions: $ADMIN}
      {nkey: ` + pub + `, permissions: $ANALYST}
` + others + `    ]
  }
}
`
	t.Setenv("T_ADMIN_PASSWORD", "admin-pw")
	url := serveConfig(t, dir, conf).ClientURL()
	mtls := []string{"--nats", url, "--tls-ca", ca, "--tls-cert", cCert, "--tls-key", cKey}
	pw := filepath.Join(dir, "admin.pw")
	if err := os.WriteFile(pw, []byte("admin-pw\n"), 0o600); err != nil {
		t.Fatal(err)
	}

	code, out, errOut := runCLI(t, append([]string{"setup", "--user", "admin", "--password-file", pw}, mtls...)...)
	if code != 0 || !strings.Contains(out, "set up") {
		t.Fatalf("setup: %d %q %q", code, out, errOut)
	}
	code, out, errOut = runCLI(t, append([]string{"tail", "--since", "start", "--no-follow", "--nkey", seedFile}, mtls...)...)
	if code != 0 {
		t.Fatalf("tail with an nkey: %d %q %q", code, out, errOut)
	}
	// The viewer reads as the analyst and needs nothing more: its pages
	// and its event streams (ordered consumers) work under that role.
	viewer := startView(t, append([]string{"--nkey", seedFile}, mtls...)...)
	if status, page := fetch(t, viewer+"suites"); status != 200 || !strings.Contains(page, "The log is empty") {
		t.Fatalf("the analyst's viewer: %d %.300s", status, page)
	}
	assertStreams(t, viewer+"events?since=0")

	wrong := filepath.Join(dir, "wrong.pw")
	if err := os.WriteFile(wrong, []byte("guessed-pw\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, errOut = runCLI(t, append([]string{"tail", "--no-follow", "--user", "admin", "--password-file", wrong}, mtls...)...)
	if code != 1 || !strings.Contains(strings.ToLower(errOut), "authorization") || !strings.Contains(errOut, "user admin") {
		t.Fatalf("wrong password: %d %q %q", code, out, errOut)
	}
	if strings.Contains(out+errOut, "guessed-pw") {
		t.Fatalf("the password was echoed: %q", out+errOut)
	}
	// TLS flags are no credential: a refused password in the URL beside
	// them is still named as the URL's.
	inURL := strings.Replace(url, "://", "://admin:guessed-pw@", 1)
	code, out, errOut = runCLI(t, append([]string{"tail", "--no-follow"}, append(mtls[2:], "--nats", inURL)...)...)
	if code != 1 || !strings.Contains(errOut, "user admin in the URL") || strings.Contains(out+errOut, "guessed-pw") {
		t.Fatalf("a wrong password in the URL, with TLS flags: %d %q %q", code, out, errOut)
	}
	code, _, errOut = runCLI(t, "tail", "--no-follow", "--nats", url, "--user", "admin", "--password-file", pw)
	if code != 1 || !strings.Contains(errOut, "certificate") {
		t.Fatalf("without the CA or a client certificate: %d %q", code, errOut)
	}
}

// security.md has the server's password variables quoted (nats-server reads
// an environment value as configuration), and operations.md once passed
// such a variable on to FACTLINE_NATS_PASSWORD: the client then sends the
// quotes and is refused. The refusal says so, without the password.
func TestAQuotedPasswordIsNamedWhenRefused(t *testing.T) {
	dir := t.TempDir()
	conf := `accounts {
  T: {
    jetstream: enabled
    users: [ {user: admin, password: $T_ADMIN_PASSWORD} ]
  }
}
`
	const secret = "k9/X+aZ-quoted"
	t.Setenv("T_ADMIN_PASSWORD", `"`+secret+`"`) // as docs/security.md says
	srv := serveConfig(t, dir, conf)

	t.Setenv(PasswordEnv, os.Getenv("T_ADMIN_PASSWORD"))
	code, out, errOut := runCLI(t, "setup", "--nats", srv.ClientURL(), "--user", "admin")
	if code != 1 || !strings.Contains(errOut, "user admin") || !strings.Contains(errOut, "quote") {
		t.Fatalf("a quoted password: exit %d, stderr %q", code, errOut)
	}
	if strings.Contains(out+errOut, secret) {
		t.Fatalf("the password was echoed: %q", out+errOut)
	}
	t.Setenv(PasswordEnv, secret)
	if code, out, errOut := runCLI(t, "setup", "--nats", srv.ClientURL(), "--user", "admin"); code != 0 || !strings.Contains(out, "set up") {
		t.Fatalf("the password without quotes: exit %d, %q %q", code, out, errOut)
	}
}

// A password written into --nats (nats://user:pw@host) is sent by the
// client, though docs/security.md keeps secrets out of URLs. When the
// server refused it, the error said "the server requires a credential"
// and told the operator to give one, as if none had been: it names the
// URL's user now, says the URL's credential was refused, and points at
// --user with --password-file, never echoing the password.
func TestACredentialInTheURLIsNamedWhenRefused(t *testing.T) {
	dir := t.TempDir()
	srv := serveConfig(t, dir, `accounts {
  T: {
    jetstream: enabled
    users: [ {user: admin, password: "right-pw"} ]
  }
}
`)
	host := strings.TrimPrefix(srv.ClientURL(), "nats://")
	const guessed = "guessed-pw"
	code, out, errOut := runCLI(t, "tail", "--no-follow", "--nats", "nats://admin:"+guessed+"@"+host)
	if code != 1 || !strings.Contains(errOut, "user admin") || !strings.Contains(errOut, "in the URL") ||
		!strings.Contains(errOut, "--password-file") || strings.Contains(errOut, "requires a credential") {
		t.Fatalf("a refused password in the URL: exit %d, stderr %q", code, errOut)
	}
	if strings.Contains(out+errOut, guessed) {
		t.Fatalf("the password was echoed: %q", out+errOut)
	}
	// A token alone in the URL is a credential too.
	code, _, errOut = runCLI(t, "tail", "--no-follow", "--nats", "nats://"+guessed+"@"+host)
	if code != 1 || !strings.Contains(errOut, "token in the URL") || strings.Contains(errOut, "requires a credential") {
		t.Fatalf("a refused token in the URL: exit %d, stderr %q", code, errOut)
	}
	// Still discouraged, but a right one is taken as before.
	if code, out, errOut := runCLI(t, "setup", "--nats", "nats://admin:right-pw@"+host); code != 0 || !strings.Contains(out, "set up") {
		t.Fatalf("the right password in the URL: exit %d, %q %q", code, out, errOut)
	}
}
