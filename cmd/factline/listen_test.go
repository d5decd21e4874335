package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nkeys"

	"github.com/factline/factline/internal/testutil"
)

// served is a 'factline serve' running in this test.
type served struct {
	out, errOut *testutil.LogBuffer
	stop        func() int // cancels the command and returns its exit code
}

// startServe runs factline serve with args until stop (or the test's
// end), and waits until it serves or exits.
func startServe(t *testing.T, args ...string) *served {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	s := &served{out: &testutil.LogBuffer{}, errOut: &testutil.LogBuffer{}}
	code := make(chan int, 1)
	go func() { code <- run(ctx, append([]string{"serve"}, args...), s.out, s.errOut) }()
	var once sync.Once
	exit := -1
	s.stop = func() int {
		once.Do(func() { cancel(); exit = <-code })
		return exit
	}
	t.Cleanup(func() { s.stop() })
	deadline := time.After(time.Minute)
	for !strings.Contains(s.out.String(), "serving ") {
		select {
		case c := <-code:
			exit = c
			once.Do(func() { cancel() })
			return s
		case <-deadline:
			t.Fatalf("serve %v did not start: %q %q", args, s.out.String(), s.errOut.String())
		case <-time.After(20 * time.Millisecond):
		}
	}
	return s
}

func freePort(t testing.TB) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

var hintRe = regexp.MustCompile(`factline (tail --nats \S+ --nkey \S+)`)

// 'serve --listen :PORT' serves this machine only, and only the holder of
// the credential it writes into the store: a new user who pastes the
// printed command connects on the first try, a client without the
// credential (or with another) is refused with an error saying what to
// do, and --store commands of other processes reach the store through the
// server. A restart keeps the credential.
func TestServeListenIsLoopbackAndNeedsTheStoresCredential(t *testing.T) {
	t.Parallel()
	store := t.TempDir()
	port := freePort(t)
	url := fmt.Sprintf("nats://127.0.0.1:%d", port)
	srv := startServe(t, "--services", "meter", "--store", store, "--listen", fmt.Sprintf(":%d", port))
	out := srv.out.String()
	if !strings.Contains(out, "serving meter") {
		t.Fatalf("serve: %q %q", out, srv.errOut.String())
	}

	if got := tcpListeners(t, port); len(got) != 1 || got[0] != "127.0.0.1" {
		t.Errorf("--listen :%d listens on %v, want 127.0.0.1 only", port, got)
	}

	cred := filepath.Join(store, "nats-client.nk")
	st, err := os.Stat(cred)
	if err != nil {
		t.Fatalf("no credential in the store: %v (serve printed %q)", err, out)
	}
	if st.Mode().Perm() != 0o600 {
		t.Errorf("credential mode %04o, want 0600", st.Mode().Perm())
	}

	if nc, err := nats.Connect(url); !errors.Is(err, nats.ErrAuthorization) {
		if nc != nil {
			nc.Close()
		}
		t.Errorf("a TCP client without the credential: %v, want an authorization violation", err)
	}
	code, _, errOut := runCLI(t, "tail", "--no-follow", "--nats", url)
	if code != 1 || !strings.Contains(errOut, "requires a credential") || !strings.Contains(errOut, "--nkey DIR/nats-client.nk") || !strings.Contains(errOut, "--store DIR") {
		t.Errorf("tail without the credential: %d %q, want an error saying to add --nkey or use --store", code, errOut)
	}

	m := hintRe.FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("serve printed no command to connect with: %q", out)
	}
	code, tailOut, errOut := runCLI(t, append(strings.Fields(m[1]), "--since", "start", "--no-follow")...)
	if code != 0 {
		t.Fatalf("the printed command %q: %d %q %q", m[1], code, tailOut, errOut)
	}
	if !strings.Contains(m[1], cred) || !strings.Contains(m[1], "--nats "+url) {
		t.Errorf("the printed command %q does not name %s and %s", m[1], url, cred)
	}
	if code, _, errOut := runCLI(t, "tail", "--store", store, "--since", "start", "--no-follow"); code != 0 {
		t.Fatalf("tail --store of a served store: %d %q", code, errOut)
	}
	tg := target{store: store}
	b, closeBus, err := tg.open(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if got := b.Conn().ConnectedUrl(); got != url {
		t.Errorf("--store of a store another process serves connected to %q, want its server %s", got, url)
	}
	closeBus()

	other, _ := nkeys.CreateUser()
	seed, _ := other.Seed()
	otherFile := filepath.Join(t.TempDir(), "other.nk")
	if err := os.WriteFile(otherFile, seed, 0o600); err != nil {
		t.Fatal(err)
	}
	code, _, errOut = runCLI(t, "tail", "--no-follow", "--nats", url, "--nkey", otherFile)
	if code != 1 || !strings.Contains(errOut, "Authorization") || !strings.Contains(errOut, "nkey other.nk") {
		t.Errorf("tail with another credential: %d %q", code, errOut)
	}

	if code := srv.stop(); code != 0 {
		t.Fatalf("serve exited %d: %q", code, srv.errOut.String())
	}
	if _, err := os.Stat(filepath.Join(store, "nats-url")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the served record outlived the server: %v", err)
	}
	if code, _, errOut := runCLI(t, "tail", "--store", store, "--since", "start", "--no-follow"); code != 0 {
		t.Fatalf("tail --store after the server stopped: %d %q", code, errOut)
	}

	first, _ := os.ReadFile(cred)
	if err := os.Chmod(cred, 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, errOut = runCLI(t, "serve", "--services", "meter", "--store", store, "--listen", fmt.Sprintf(":%d", port))
	if code != 1 || !strings.Contains(errOut, "chmod 600") {
		t.Errorf("serve with a credential others may read: %d %q", code, errOut)
	}
	if err := os.Chmod(cred, 0o600); err != nil {
		t.Fatal(err)
	}
	again := startServe(t, "--services", "meter", "--store", store, "--listen", fmt.Sprintf(":%d", port))
	if second, _ := os.ReadFile(cred); !bytes.Equal(first, second) || !strings.Contains(again.out.String(), "kept from an earlier start") {
		t.Errorf("a restart changed the credential, or did not say it kept it: %q", again.out.String())
	}
	if code, _, errOut := runCLI(t, append(strings.Fields(m[1]), "--since", "start", "--no-follow")...); code != 0 {
		t.Fatalf("the first start's command after a restart: %d %q", code, errOut)
	}
	code, _, errOut = runCLI(t, "serve", "--services", "meter", "--store", store, "--listen", ":0")
	if code != 1 || !strings.Contains(errOut, fmt.Sprintf("is held by process %d", os.Getpid())) || !strings.Contains(errOut, url) {
		t.Errorf("a second server on a served store: %d %q", code, errOut)
	}
}

// --no-auth exists for throwaway stores on loopback, and says loudly what
// it gives away.
func TestServeNoAuthIsLoud(t *testing.T) {
	t.Parallel()
	store := t.TempDir()
	port := freePort(t)
	srv := startServe(t, "--services", "meter", "--store", store, "--listen", fmt.Sprintf("127.0.0.1:%d", port), "--no-auth")
	out := srv.out.String()
	if !strings.Contains(out, "WARNING: --no-auth") || !strings.Contains(out, "delete the stream") {
		t.Errorf("--no-auth did not warn: %q", out)
	}
	nc, err := nats.Connect(fmt.Sprintf("nats://127.0.0.1:%d", port))
	if err != nil {
		t.Fatalf("--no-auth refused a client without a credential: %v", err)
	}
	nc.Close()
	if _, err := os.Stat(filepath.Join(store, "nats-client.nk")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("--no-auth wrote a credential: %v", err)
	}
	if code, _, errOut := runCLI(t, "tail", "--store", store, "--since", "start", "--no-follow"); code != 0 {
		t.Fatalf("tail --store of a store served without auth: %d %q", code, errOut)
	}
}

// An address other hosts can reach is served only when asked for, and
// never without the credential.
func TestServeListenBeyondLoopbackIsExplicit(t *testing.T) {
	t.Parallel()
	port := freePort(t)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--listen", fmt.Sprintf("0.0.0.0:%d", port)}, "--allow-remote"},
		{[]string{"--listen", fmt.Sprintf("0.0.0.0:%d", port), "--allow-remote", "--no-auth"}, "loopback only"},
		{[]string{"--listen", fmt.Sprintf("[::]:%d", port), "--no-auth"}, "--allow-remote"},
		{[]string{"--allow-remote"}, "go with --listen"},
		{[]string{"--listen", "nope"}, "want PORT, :PORT or HOST:PORT"},
	} {
		code, _, errOut := runCLI(t, append([]string{"serve", "--services", "meter", "--store", t.TempDir()}, c.args...)...)
		if code != 2 || !strings.Contains(errOut, c.want) {
			t.Errorf("serve %v: %d %q, want a usage error about %q", c.args, code, errOut, c.want)
		}
	}
	if conn, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port)); err == nil {
		conn.Close()
		t.Errorf("a refused --listen left port %d open", port)
	}

	for _, c := range []struct {
		listen            string
		allowRemote, open bool
		want              listenPlan
	}{
		{"4222", false, false, listenPlan{addr: "127.0.0.1:4222", loopback: true, auth: true}},
		{":4222", false, false, listenPlan{addr: "127.0.0.1:4222", loopback: true, auth: true}},
		{"localhost:4222", false, true, listenPlan{addr: "127.0.0.1:4222", loopback: true}},
		{"[::1]:4222", false, false, listenPlan{addr: "[::1]:4222", loopback: true, auth: true}},
		{":0", false, false, listenPlan{addr: "127.0.0.1:-1", loopback: true, auth: true}},
		{"0.0.0.0:4222", true, false, listenPlan{addr: "0.0.0.0:4222", auth: true}},
		{"10.0.0.5:4222", true, false, listenPlan{addr: "10.0.0.5:4222", auth: true}},
	} {
		got, err := planListen(c.listen, c.allowRemote, c.open)
		if err != nil || got != c.want {
			t.Errorf("planListen(%q, remote %v, no-auth %v) = %+v, %v; want %+v", c.listen, c.allowRemote, c.open, got, err, c.want)
		}
	}
}
