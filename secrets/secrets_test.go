package secrets_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/factline/factline/models"
	"github.com/factline/factline/models/anthropic"
	"github.com/factline/factline/models/openai"
	"github.com/factline/factline/secrets"
)

const key = "sk-test-5f2c9e1a77b04d3e"

func TestRedactReplacesValueAndEncodings(t *testing.T) {
	r := secrets.New(secrets.Secret{Name: "OPENAI_API_KEY", Value: key})
	for _, form := range []string{
		key,
		base64.StdEncoding.EncodeToString([]byte(key)),
		base64.RawURLEncoding.EncodeToString([]byte(key)),
		fmt.Sprintf("%x", key),
	} {
		got := r.Redact("before " + form + " after")
		if strings.Contains(got, form) || got != "before [redacted:OPENAI_API_KEY] after" {
			t.Errorf("%q: got %q", form, got)
		}
	}
	if got := r.Redact("nothing secret here"); got != "nothing secret here" {
		t.Errorf("plain text changed: %q", got)
	}
}

func TestShortValuesAreNotRedacted(t *testing.T) {
	r := secrets.New(secrets.Secret{Name: "SHORT", Value: "admin"}, secrets.Secret{Name: "EMPTY"})
	if got := r.Redact("the admin user"); got != "the admin user" {
		t.Errorf("a value under %d bytes was redacted: %q", secrets.MinLen, got)
	}
	if r.Len() != 0 {
		t.Errorf("Len = %d, want 0", r.Len())
	}
}

func TestLongerSecretWins(t *testing.T) {
	r := secrets.New(secrets.Secret{Name: "PART", Value: "abcdefgh"}, secrets.Secret{Name: "WHOLE", Value: "abcdefgh-ijklmnop"})
	if got := r.Redact("x abcdefgh-ijklmnop y abcdefgh"); got != "x [redacted:WHOLE] y [redacted:PART]" {
		t.Errorf("got %q", got)
	}
}

func TestNilRedactorIsIdentity(t *testing.T) {
	var r *secrets.Redactor
	if r.Redact(key) != key || r.Len() != 0 || r.Names() != nil {
		t.Error("a nil redactor changed something")
	}
}

func TestLoadFromEnvironmentAndFiles(t *testing.T) {
	dir := t.TempDir()
	creds := filepath.Join(dir, "user.creds")
	jwt := "eyJ0eXAiOiJKV1QiLCJhbGciOiJlZDI1NTE5In0.payload.sig"
	seed := "SUACSSL3UAHUDXKFSNVUZRF5UHPMWZ6BFDTJ7M6USDXIEDNPPQYYYCU3VY"
	must(t, os.WriteFile(creds, []byte("-----BEGIN NATS USER JWT-----\n"+jwt+"\n------END NATS USER JWT------\n\n"+
		"************************* IMPORTANT *************************\n"+
		"-----BEGIN USER NKEY SEED-----\n"+seed+"\n------END USER NKEY SEED------\n"), 0o600))
	env := map[string]string{"OPENAI_API_KEY": key, "MY_TOKEN": "tok-0123456789"}
	r, err := secrets.Load(func(n string) string { return env[n] }, secrets.DefaultNames, []string{"MY_TOKEN", "UNSET_ONE"}, []string{creds})
	if err != nil {
		t.Fatal(err)
	}
	text := "key=" + key + " token=tok-0123456789 jwt=" + jwt + " seed=" + seed
	got := r.Redact(text)
	for _, s := range []string{key, "tok-0123456789", jwt, seed} {
		if strings.Contains(got, s) {
			t.Errorf("%q survived: %q", s, got)
		}
	}
	for _, m := range []string{"[redacted:OPENAI_API_KEY]", "[redacted:MY_TOKEN]", "[redacted:user.creds]"} {
		if !strings.Contains(got, m) {
			t.Errorf("no %s in %q", m, got)
		}
	}
	if got := r.Redact("-----BEGIN NATS USER JWT-----"); got != "-----BEGIN NATS USER JWT-----" {
		t.Errorf("a creds file's frame was redacted: %q", got)
	}

	_, err = secrets.Load(func(string) string { return "" }, nil, nil, []string{filepath.Join(dir, "missing")})
	if err == nil || !strings.Contains(err.Error(), "missing") || !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a missing secret file: %v", err)
	}
}

func TestFromEnvironmentReadsNamedVariables(t *testing.T) {
	t.Setenv("FACTLINE_TEST_SECRET_A", "value-aaaaaaaa")
	t.Setenv(secrets.EnvSecretNames, " FACTLINE_TEST_SECRET_A ,")
	t.Setenv(secrets.EnvSecretFiles, "")
	r, err := secrets.FromEnvironment()
	if err != nil {
		t.Fatal(err)
	}
	if got := r.Redact("a value-aaaaaaaa"); got != "a [redacted:FACTLINE_TEST_SECRET_A]" {
		t.Errorf("got %q", got)
	}
}

type stringer struct{ s string }

func (s stringer) String() string { return s.s }

func TestHandlerRedactsEveryPartOfALogLine(t *testing.T) {
	r := secrets.New(secrets.Secret{Name: "K", Value: key})
	var buf bytes.Buffer
	log := slog.New(secrets.NewHandler(slog.NewJSONHandler(&buf, nil), r))
	log = log.With("bound", "b "+key)
	log.WithGroup("g").Info("calling with "+key,
		"str", key,
		"err", fmt.Errorf("request failed: %s", key),
		"any", stringer{key},
		slog.Group("grp", "inner", key, "n", 3),
		"n", 42)
	out := buf.String()
	if strings.Contains(out, key) {
		t.Fatalf("the key reached the log: %s", out)
	}
	if c := strings.Count(out, "[redacted:K]"); c != 6 {
		t.Errorf("%d markers, want 6: %s", c, out)
	}
	if !strings.Contains(out, `"n":42`) {
		t.Errorf("a number attribute was lost: %s", out)
	}
}

// The OpenAI-compatible provider never puts its key in an error, even when
// the endpoint echoes it; and the redactor built from the environment
// would catch it if it did.
func TestModelKeyNeverInProviderErrors(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusUnauthorized)
		fmt.Fprintf(w, `{"error":{"message":"bad key %s","type":"invalid_request_error"}}`, strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer "))
	}))
	defer srv.Close()
	t.Setenv(openai.EnvAPIKey, key)
	t.Setenv(openai.EnvBaseURL, srv.URL+"/v1")
	t.Setenv(openai.EnvModel, "m")
	cfg, err := openai.Config{}.FromEnv()
	must(t, err)
	m, err := openai.New(cfg)
	must(t, err)
	_, err = m.Complete(context.Background(), models.Request{Turn: 1, Messages: []models.Message{{Role: models.RoleUser, Content: "hi"}}})
	if err == nil {
		t.Fatal("a 401 was not an error")
	}
	if strings.Contains(err.Error(), key) {
		t.Errorf("the provider's error holds the key: %v", err)
	}
	r, err2 := secrets.FromEnvironment()
	must(t, err2)
	if red := r.Redact("echo: bad key " + key); strings.Contains(red, key) {
		t.Errorf("the environment's redactor misses the model key: %q", red)
	}
}

// Every variable a hosted provider reads its key from is a secret without
// being named in FACTLINE_SECRET_ENV: a treatment of any provider keeps its
// key out of the log. (The Responses provider reads openai's variables.)
func TestEveryProviderKeyVariableIsASecret(t *testing.T) {
	t.Setenv(secrets.EnvSecretNames, "")
	t.Setenv(secrets.EnvSecretFiles, "")
	for i, name := range []string{openai.EnvAPIKey, openai.EnvOpenAIKey, anthropic.EnvAPIKey, anthropic.EnvAnthropicKey} {
		t.Setenv(name, fmt.Sprintf("sk-provider-key-%d-0123456789", i))
	}
	r, err := secrets.FromEnvironment()
	must(t, err)
	for i, name := range []string{openai.EnvAPIKey, openai.EnvOpenAIKey, anthropic.EnvAPIKey, anthropic.EnvAnthropicKey} {
		v := fmt.Sprintf("sk-provider-key-%d-0123456789", i)
		if got, want := r.Redact("key "+v), "key [redacted:"+name+"]"; got != want {
			t.Errorf("%s: got %q, want %q", name, got, want)
		}
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// A variable FACTLINE_SECRET_ENV names that is not set (a misspelt name,
// or a variable this process was not given) protects nothing; it is still
// skipped, since a process may rightly lack it, but it is named, so the
// caller can say so instead of redacting nothing in silence.
func TestNamedButUnsetVariablesAreNamed(t *testing.T) {
	t.Setenv("FACTLINE_TEST_SECRET_SET", "value-bbbbbbbb")
	t.Setenv("FACTLINE_TEST_SECRET_EMPTY", "")
	t.Setenv(secrets.EnvSecretNames, "FACTLINE_TEST_SECRET_SET, FACTLINE_TEST_SECRET_TYPO,FACTLINE_TEST_SECRET_EMPTY")
	got := secrets.UnsetNamed()
	if want := []string{"FACTLINE_TEST_SECRET_TYPO", "FACTLINE_TEST_SECRET_EMPTY"}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("UnsetNamed() = %v, want %v", got, want)
	}
	t.Setenv(secrets.EnvSecretNames, "")
	if got := secrets.UnsetNamed(); len(got) != 0 {
		t.Errorf("with nothing named: %v", got)
	}
}
