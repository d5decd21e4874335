package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nkeys"
	"github.com/spf13/pflag"

	"github.com/factline/factline/bus"
	"github.com/factline/factline/internal/urlsecret"
	"github.com/factline/factline/secrets"
)

// PasswordEnv is the environment variable a NATS password is read from when
// neither --password nor --password-file is given. An environment variable
// or a file keeps the secret out of the process list, which --password does
// not.
const PasswordEnv = "FACTLINE_NATS_PASSWORD"

// PasswordSecret names the NATS password in the log's redaction marker,
// [redacted:nats-password], wherever it was read from.
const PasswordSecret = "nats-password"

// credentials are how a command identifies itself to a NATS server: every
// command that takes --nats takes these too (see docs/security.md).
type credentials struct {
	creds        string
	user         string
	password     string
	passwordFile string
	nkey         string
	tlsCA        string
	tlsCert      string
	tlsKey       string
	// quoted is set by options when the password read starts and ends
	// with a quote, for the refusal's hint (never the password itself).
	quoted bool
	// padded is set by options when the password read starts or ends
	// with a space or tab, and pwFrom says where it was read, for the
	// refusal's hint.
	padded bool
	pwFrom string
}

func (c *credentials) flags(fs *pflag.FlagSet) {
	fs.StringVar(&c.creds, "creds", "", "with --nats: a NATS credentials file (JWT and nkey seed)")
	fs.StringVar(&c.user, "user", "", "with --nats: the NATS user name of this process's role")
	fs.StringVar(&c.password, "password", "", "with --user: the password (visible to ps; prefer --password-file or $"+PasswordEnv+")")
	fs.StringVar(&c.passwordFile, "password-file", "", "with --user: a file holding the password (one line)")
	fs.StringVar(&c.nkey, "nkey", "", "with --nats: a file holding the nkey seed of this process's user")
	fs.StringVar(&c.tlsCA, "tls-ca", "", "with --nats: CA certificate (PEM) to verify the server with; turns TLS on")
	fs.StringVar(&c.tlsCert, "tls-cert", "", "with --nats: client certificate (PEM) for mutual TLS; needs --tls-key")
	fs.StringVar(&c.tlsKey, "tls-key", "", "with --nats: client private key (PEM) for mutual TLS")
	markConnection(fs, "creds", "user", "password", "password-file", "nkey", "tls-ca", "tls-cert", "tls-key")
}

// given reports whether any credential or TLS flag was set.
func (c *credentials) given() bool {
	return c.creds != "" || c.user != "" || c.password != "" || c.passwordFile != "" || c.nkey != "" ||
		c.tlsCA != "" || c.tlsCert != "" || c.tlsKey != ""
}

// identityFlag is the identity flag given (--user, --nkey or --creds),
// or "" for none.
func (c *credentials) identityFlag() string {
	switch {
	case c.user != "":
		return "--user"
	case c.nkey != "":
		return "--nkey"
	case c.creds != "":
		return "--creds"
	}
	return ""
}

// identity names who this process is to the server, for error messages.
// It never includes a secret.
func (c *credentials) identity() string {
	switch {
	case c.user != "":
		return "user " + c.user
	case c.nkey != "":
		return "nkey " + filepath.Base(c.nkey)
	case c.creds != "":
		return "creds " + filepath.Base(c.creds)
	}
	return "no credentials"
}

// options turns the flags into connection options. Secrets are read here,
// once, and go nowhere but the connection.
func (c *credentials) options() ([]nats.Option, error) {
	var opts []nats.Option
	// How the flags combine is checked before any file is read: a call
	// that names two methods is wrong whatever the files hold.
	methods := 0
	for _, given := range []bool{c.creds != "", c.nkey != "", c.user != ""} {
		if given {
			methods++
		}
	}
	switch {
	case methods > 1:
		return nil, usageError{"give one of --creds, --nkey or --user"}
	case c.password != "" && c.passwordFile != "":
		return nil, usageError{"give --password or --password-file, not both"}
	case c.user == "" && (c.password != "" || c.passwordFile != ""):
		return nil, usageError{"a password needs --user"}
	case (c.tlsCert == "") != (c.tlsKey == ""):
		return nil, usageError{"--tls-cert and --tls-key go together"}
	}
	// Each file holding a secret is looked at before it is read: one that
	// any user may change is refused, one open to others said.
	for _, f := range []struct{ flag, path string }{
		{"--creds", c.creds}, {"--nkey", c.nkey}, {"--password-file", c.passwordFile}, {"--tls-key", c.tlsKey},
	} {
		if f.path == "" {
			continue
		}
		if err := checkSecretFile(f.flag, f.path); err != nil {
			return nil, err
		}
	}
	if c.creds != "" {
		if err := checkCreds(c.creds); err != nil {
			return nil, err
		}
		opts = append(opts, nats.UserCredentials(c.creds))
	}
	if c.nkey != "" {
		if _, err := os.Stat(c.nkey); err != nil {
			return nil, fileError{fmt.Errorf("--nkey: %w", err)}
		}
		o, err := nats.NkeyOptionFromSeed(c.nkey)
		if err != nil {
			return nil, fileError{fmt.Errorf("--nkey %s: %w", c.nkey, err)}
		}
		opts = append(opts, o)
	}
	if c.user != "" {
		pw, err := c.readPassword()
		if err != nil {
			return nil, err
		}
		// A secret of the process like those the environment names: a log
		// line that quotes it (a URL it was written into, an error that
		// repeats it) shows the marker. It lives as long as the process.
		logSecrets.Add(secrets.Secret{Name: PasswordSecret, Value: pw})
		c.quoted = len(pw) >= 2 && (pw[0] == '"' || pw[0] == '\'') && pw[len(pw)-1] == pw[0]
		c.padded = strings.TrimLeft(pw, " \t") != pw || strings.TrimRight(pw, " \t") != pw
		opts = append(opts, nats.UserInfo(c.user, pw))
	}
	if c.tlsCA != "" {
		opts = append(opts, nats.RootCAs(c.tlsCA))
	}
	if c.tlsCert != "" {
		opts = append(opts, nats.ClientCert(c.tlsCert, c.tlsKey))
	}
	return opts, nil
}

// secretFilesSaid is the secret files this process has warned about.
var secretFilesSaid sync.Map

// checkSecretFile looks at the mode and owner of a file a flag names that
// holds a secret, by the rule the store's own credential is held to
// (secrets.FileExposure; docs/security.md#secret-files). One that any
// user may change is refused: anyone could have put a credential of
// their choosing in it, and the process would act as that identity. One
// that other users may read, that its group may change or that another
// user owns is used, with one warning naming the flag, the path, its
// mode and the fix: a deployment may have no other way to hand it to a
// container's user (deploy/compose/secrets.sh writes 0444 when it does not
// run as root). A file that cannot be looked at is left to the read,
// whose error names it.
func checkSecretFile(flag, path string) error {
	return checkExposure("flag", flag, path)
}

// checkSecretFilesEnv holds each file $FACTLINE_SECRET_FILES names to the
// rule checkSecretFile holds a flag's file to: they hold secrets as much.
// A file that cannot be looked at is left to the redactor's read, whose
// error names it.
func checkSecretFilesEnv() error {
	for _, f := range secrets.NamedFiles() {
		if err := checkExposure("variable", secrets.EnvSecretFiles, f); err != nil {
			return err
		}
	}
	return nil
}

// checkExposure is checkSecretFile's rule for the file at path, named by
// source (a flag, or a variable): kind is the log attribute naming the
// source ("flag" or "variable"). The warning is a security finding,
// printed whatever the log level (findings).
func checkExposure(kind, source, path string) error {
	exp, err := secrets.StatFile(path)
	if err != nil {
		return nil
	}
	problems := exp.Problems()
	if len(problems) == 0 {
		return nil
	}
	if exp.WorldWrite() {
		named := source + " " + path
		if kind == "variable" {
			named = fmt.Sprintf("%s (named in $%s)", path, source)
		}
		return fileError{fmt.Errorf("%s holds a secret and %s (mode %s): anyone could have put their own credential in it; run '%s'",
			named, strings.Join(problems, ", "), exp.ModeString(), exp.Fix())}
	}
	if _, said := secretFilesSaid.LoadOrStore(source+" "+path, true); said {
		return nil // a command that connects twice says it once
	}
	findings().Warn("UNPROTECTED secret file: "+strings.Join(problems, ", "),
		kind, source, "path", path, "mode", exp.ModeString(), "fix", exp.Fix())
	return nil
}

// checkCreds reads a --creds file as the NATS client will at connect,
// so that one that is no credentials file is named now, as a file error:
// at connect it was "error signing nonce", and a file holding only the
// seed was sent the seed as its JWT.
func checkCreds(path string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return fileError{fmt.Errorf("--creds: %w", err)}
	}
	jwt, err := nkeys.ParseDecoratedJWT(data)
	if err != nil || strings.Count(jwt, ".") != 2 || strings.ContainsAny(jwt, " \t\r\n") {
		return fileError{fmt.Errorf("--creds %s holds no user JWT: want a NATS credentials file (-----BEGIN NATS USER JWT----- … and its USER NKEY SEED)", path)}
	}
	if _, err := nkeys.ParseDecoratedUserNKey(data); err != nil {
		return fileError{fmt.Errorf("--creds %s holds no user nkey seed (%v): want a NATS credentials file (its NATS USER JWT and -----BEGIN USER NKEY SEED----- …)", path, err)}
	}
	return nil
}

// readPassword returns the password of --password, --password-file or
// $FACTLINE_NATS_PASSWORD. The line break that ends a file (or a variable
// filled from one) is no part of it; anything on a further line is a
// mistake nothing could authenticate with, refused naming the file.
func (c *credentials) readPassword() (string, error) {
	switch {
	case c.password != "":
		c.pwFrom = "--password"
		return c.password, nil
	case c.passwordFile != "":
		c.pwFrom = "--password-file " + c.passwordFile
		data, err := os.ReadFile(c.passwordFile)
		if err != nil {
			return "", fileError{fmt.Errorf("--password-file: %w", err)}
		}
		pw := strings.TrimRight(string(data), "\r\n")
		if pw == "" {
			return "", fileError{fmt.Errorf("--password-file %s is empty", c.passwordFile)}
		}
		if strings.TrimSpace(pw) == "" {
			return "", fileError{fmt.Errorf("--password-file %s holds only blanks (%d bytes): it must hold the password", c.passwordFile, len(data))}
		}
		if strings.ContainsAny(pw, "\r\n") {
			return "", fileError{fmt.Errorf("--password-file %s holds more than one line: it must hold the password alone, on one line", c.passwordFile)}
		}
		return pw, nil
	}
	if pw := strings.TrimRight(os.Getenv(PasswordEnv), "\r\n"); pw != "" {
		c.pwFrom = "$" + PasswordEnv
		return pw, nil
	}
	return "", usageError{fmt.Sprintf("--user %s needs a password: --password-file FILE or $%s", c.user, PasswordEnv)}
}

// PermissionError is a request the NATS server refused because this
// process's identity lacks the permission: the role's configuration and the
// work asked of it disagree.
type PermissionError struct {
	Identity string // who connected, e.g. "user runner"
	Op       string // "publish" or "subscribe"
	Subject  string
	Need     string // what the subject was for, when known
}

func (e *PermissionError) Error() string {
	need := ""
	if e.Need != "" {
		need = " (needed " + e.Need + ")"
	}
	return fmt.Sprintf("permission denied: NATS %s may not %s to %q%s; the server refused it (Permissions Violation). "+
		"Connect as the role that owns this work, or fix its permissions (ops/nats/roles.conf, docs/security.md)",
		e.Identity, e.Op, e.Subject, need)
}

var violationRe = regexp.MustCompile(`(?i)permissions violation for (publish|subscription) to "([^"]+)"`)

// guard turns the server's asynchronous permission violations into errors:
// the server does not answer a refused request, it reports the violation
// on the side, and the request would otherwise just time out.
type guard struct {
	identity string
	onDeny   func(error)

	mu     sync.Mutex
	denied map[string]*PermissionError
	notify chan struct{}
	// opened is set once the bus is open: from then on a refused stream
	// create is the bus making a lost CONTROL again, which a role that may
	// not manage streams reports on /healthz and in a metric
	// (factline_bus_stream_missing) instead of ending the command.
	opened atomic.Bool
}

func newGuard(identity string, onDeny func(error)) *guard {
	return &guard{identity: identity, onDeny: onDeny, denied: map[string]*PermissionError{}, notify: make(chan struct{}, 1)}
}

func (g *guard) handle(_ *nats.Conn, sub *nats.Subscription, err error) {
	if !errors.Is(err, nats.ErrPermissionViolation) {
		if sub != nil {
			slog.Warn("NATS error", "subject", sub.Subject, "err", err)
		} else {
			slog.Warn("NATS error", "err", err)
		}
		return
	}
	pe := &PermissionError{Identity: g.identity, Op: "use", Subject: "?"}
	if m := violationRe.FindStringSubmatch(err.Error()); m != nil {
		pe.Op, pe.Subject = strings.ToLower(m[1]), m[2]
		if pe.Op == "subscription" {
			pe.Op = "subscribe"
		}
	}
	pe.Need = hintFor(pe.Subject)
	g.mu.Lock()
	_, seen := g.denied[pe.Subject]
	g.denied[pe.Subject] = pe
	g.mu.Unlock()
	select {
	case g.notify <- struct{}{}:
	default:
	}
	if g.onDeny != nil && !(g.opened.Load() && strings.HasPrefix(pe.Subject, "$JS.API.STREAM.CREATE.")) {
		// The refusal ends the command and becomes its error, which
		// says it: logging it too would say it twice.
		g.onDeny(pe)
		return
	}
	// Nothing ends on it (a lost CONTROL remade by a role that may not,
	// which /healthz reports, or no command to end): the log is the one
	// place it is said.
	if !seen {
		slog.Error("NATS refused a request", "err", pe)
	}
}

// hintFor says what a refused JetStream API subject was for, where that
// points at the fix.
func hintFor(subject string) string {
	const api = "$JS.API."
	if name, ok := strings.CutPrefix(subject, api+"STREAM.CREATE."); ok {
		return fmt.Sprintf("to create stream %s, which does not exist yet; only the admin role manages streams: run 'factline setup' as admin first", name)
	}
	if name, ok := strings.CutPrefix(subject, api+"STREAM.UPDATE."); ok {
		return fmt.Sprintf("to change stream %s; only the admin role manages streams: run 'factline setup' as admin", name)
	}
	if rest, ok := strings.CutPrefix(subject, api+"CONSUMER.CREATE."); ok {
		return "to create consumer " + rest
	}
	return ""
}

// deniedFor returns the violation recorded for subject, if any.
func (g *guard) deniedFor(subject string) *PermissionError {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.denied[subject]
}

// violationKey carries, in a command's context, what to do when the server
// refuses a request: main cancels the command with the violation as cause
// and exits non-zero naming it.
type violationKey struct{}

func withViolationHook(ctx context.Context, hook func(error)) context.Context {
	return context.WithValue(ctx, violationKey{}, hook)
}

func violationHook(ctx context.Context) func(error) {
	h, _ := ctx.Value(violationKey{}).(func(error))
	return h
}

// dial connects to a NATS server with the credentials and opens the bus on
// it. A permission the identity lacks ends the command (through the
// context's violation hook) with an error naming the subject and identity.
func dial(ctx context.Context, rawURL string, c *credentials, cfg bus.Config) (*bus.Bus, *guard, error) {
	if flag := c.identityFlag(); flag != "" && urlsecret.HasUserinfo(rawURL) {
		// nats.go sends the URL's userinfo and drops the flag's identity
		// without a word: the process would run as someone else than its
		// --user, and its errors would name the wrong one.
		return nil, nil, usageError{fmt.Sprintf("--nats %s carries its own user or token, which the NATS client would use instead of %s: "+
			"give the identity once, as %s (docs/security.md)", redactURL(rawURL), flag, flag)}
	}
	opts, err := c.options()
	if err != nil {
		return nil, nil, err
	}
	who, inURL := c.identity(), ""
	if c.identityFlag() == "" {
		// nats.go sends what the URL carries when no flag gives a
		// credential (TLS flags give none); errors must say whose it was.
		if inURL = urlIdentity(rawURL); inURL != "" {
			who = inURL
		}
	}
	g := newGuard(who, violationHook(ctx))
	opts = append([]nats.Option{nats.Name("factline"), nats.MaxReconnects(-1), nats.ErrorHandler(g.handle)}, opts...)
	nc, err := nats.Connect(rawURL, opts...)
	if err != nil {
		err = connectError(err)
		if errors.Is(err, nats.ErrAuthorization) || strings.Contains(strings.ToLower(err.Error()), "authorization") {
			if inURL != "" {
				return nil, nil, fmt.Errorf("connect %s as %s: %w: the server refused the credential written into the URL. "+
					"Keep secrets out of URLs: give --user NAME with --password-file FILE (or $%s), --nkey or --creds instead (docs/security.md)",
					redactURL(rawURL), inURL, err, PasswordEnv)
			}
			if !c.given() {
				return nil, nil, fmt.Errorf("connect %s: %w: the server requires a credential. "+
					"A 'factline serve --store DIR --listen' admits the holder of DIR/%s: add --nkey DIR/%s, or use --store DIR on its machine; "+
					"for another server, give --user, --nkey or --creds (docs/security.md)", redactURL(rawURL), err, bus.StoreCredentialFile, bus.StoreCredentialFile)
			}
			if c.quoted {
				// The server's configuration wants its password variables
				// quoted (docs/security.md); passing one on as the client's
				// password sends the quotes too.
				return nil, nil, fmt.Errorf("connect %s as %s: %w: the password given starts and ends with a quote, "+
					"which the client sends as part of it. The quotes belong in nats-server's variable (FACTLINE_<ROLE>_PASSWORD='\"…\"'), "+
					"not in --password-file or $%s: give the password without them (docs/security.md)", redactURL(rawURL), who, err, PasswordEnv)
			}
			if c.padded {
				// A blank a file or variable picked up is sent as part of
				// the password; nothing else would tell it from a wrong one.
				return nil, nil, fmt.Errorf("connect %s as %s: %w: the password in %s starts or ends with a space or tab, "+
					"which the client sends as part of it: remove it if the password has none (docs/security.md)", redactURL(rawURL), who, err, c.pwFrom)
			}
			return nil, nil, fmt.Errorf("connect %s as %s: %w (wrong user, password, nkey or creds? "+
				"A 'factline serve --store DIR --listen' admits only the nkey in DIR/%s)", redactURL(rawURL), who, err, bus.StoreCredentialFile)
		}
		return nil, nil, fmt.Errorf("connect %s: %w", redactURL(rawURL), err)
	}
	b, err := bus.Open(ctx, nc, cfg)
	if err != nil {
		nc.Close()
		if cause := context.Cause(ctx); errors.As(cause, new(*PermissionError)) {
			return nil, nil, cause
		}
		return nil, nil, err
	}
	g.opened.Store(true)
	return b, g, nil
}

// urlIdentity names the credential written into a server URL, as the
// client sends it (a user with a password, or a lone token), or "" when
// the URL carries none. It never includes a secret.
func urlIdentity(raw string) string {
	for _, part := range strings.Split(raw, ",") {
		u, err := url.Parse(strings.TrimSpace(part))
		if err != nil {
			if urlsecret.HasUserinfo(part) {
				return "the user or token in the URL"
			}
			continue
		}
		if u.User == nil {
			continue
		}
		if _, has := u.User.Password(); has {
			return "user " + u.User.Username() + " in the URL"
		}
		return "a token in the URL"
	}
	return ""
}

// redactURL drops the secret written into a server URL (a password or a
// token, also in a URL that does not parse), so that it never reaches a
// log or an error message.
func redactURL(raw string) string { return urlsecret.URL(raw) }

// connectError is nats.Connect's error with the URL it may quote (a
// *url.Error of a URL that does not parse) redacted.
func connectError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		ue.URL = redactURL(ue.URL)
	}
	return err
}
