package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/factline/factline/internal/testutil"
)

var viewURL = regexp.MustCompile(`factline view: (http://127\.0\.0\.1:\d+/)`)

// startView runs 'factline view' with args until the test ends and returns
// the URL it serves.
func startView(t *testing.T, args ...string) string {
	t.Helper()
	url, _ := startViewOut(t, args...)
	return url
}

// startViewOut is startView that also returns what the command says on
// stderr.
func startViewOut(t *testing.T, args ...string) (string, *testutil.LogBuffer) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var out testutil.LogBuffer
	errOut := &testutil.LogBuffer{}
	done := make(chan int, 1)
	go func() { done <- run(ctx, append([]string{"view", "--listen", "127.0.0.1:0"}, args...), &out, errOut) }()
	t.Cleanup(func() {
		cancel()
		if code := <-done; code != 0 {
			t.Errorf("view exited %d after its context ended: %s", code, errOut.String())
		}
	})
	deadline := time.Now().Add(time.Minute)
	for {
		if m := viewURL.FindStringSubmatch(out.String()); m != nil {
			return m[1], errOut
		}
		select {
		case code := <-done:
			done <- code
			t.Fatalf("view exited %d: %s%s", code, out.String(), errOut.String())
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("view never said where it serves: %q", out.String())
		}
	}
}

func fetch(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}

// 'factline view' serves a store's pages on loopback, and an export of the
// same store gives the same page data; it stops cleanly when interrupted.
func TestViewServesAStoreAndItsExportAlike(t *testing.T) {
	t.Parallel()
	store := t.TempDir()
	if code, _, errOut := runCLI(t, "demo", "--store", store, "--fsync", "interval"); code != 0 {
		t.Fatalf("demo: %s", errOut)
	}
	export := filepath.Join(t.TempDir(), "demo.flx")
	if code, _, errOut := runCLI(t, "export", "--store", store, "--out", export); code != 0 {
		t.Fatalf("export: %s", errOut)
	}
	live := startView(t, "--store", store)
	status, page := fetch(t, live+"suites")
	if status != http.StatusOK || !strings.Contains(page, `data-suite="demo"`) {
		t.Fatalf("the suites page: %d\n%s", status, page)
	}
	fromFile := startView(t, "--file", export)
	_, a := fetch(t, live+"api/suites")
	_, b := fetch(t, fromFile+"api/suites")
	if a != b || !strings.Contains(a, `"suite": "demo"`) {
		t.Fatalf("the store and its export give different pages:\n%s\n%s", a, b)
	}
}

// view is called with one source, an export that is there, and a listen
// address it can use; a mistake says so.
func TestViewRefusesWhatItCannotServe(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"view", "--file", "x.flx", "--store", dir}, 2, "give --file, --store or --nats, only one"},
		{[]string{"view", "--file", filepath.Join(dir, "nosuch.flx")}, 2, "nosuch.flx: no such file"},
		{[]string{"view", "--store", filepath.Join(dir, "typo")}, 1, "no store at"},
		{[]string{"view"}, 2, "say where the log is"},
		{[]string{"view", "stray"}, 2, `view takes no arguments, got "stray"`},
		{[]string{"view", "--store", dir, "--listen", "seventy"}, 2, `--listen "seventy": want PORT, :PORT or HOST:PORT`},
		{[]string{"view", "--store", dir, "--listen", "0.0.0.0:0"}, 2, "--listen 0.0.0.0:0 can be reached from other hosts: add --allow-remote to mean it (whoever reaches it reads every fact"},
	} {
		code, _, errOut := runCLI(t, c.args...)
		if code != c.code || !strings.Contains(errOut, c.want) {
			t.Errorf("factline %v: exit %d, %q; want %d saying %q", c.args, code, errOut, c.code, c.want)
		}
	}
	if code, _, errOut := runCLI(t, "view", "--file", "view.go"); code != 1 || !strings.Contains(errOut, "read view.go") {
		t.Errorf("a file that is no export: exit %d, %q", code, errOut)
	}
}

// assertStreams opens an event stream and checks it is one: the viewer
// made its ordered consumer.
func assertStreams(t *testing.T, url string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	buf := make([]byte, 64)
	n, err := resp.Body.Read(buf)
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(string(buf[:n]), "retry:") {
		t.Fatalf("event stream: %d %q %v", resp.StatusCode, buf[:n], err)
	}
}

// 'view --listen' reads an address by serve's rule: a bare port, :PORT
// and localhost:PORT are this machine only, bound on 127.0.0.1 and said to
// be so; an address other hosts reach needs --allow-remote, for view as
// for serve. The pages answer to this machine's loopback names, the
// --listen host and --allow-host names, and refuse any other Host (421):
// a page elsewhere that rebinds its name to the viewer reads nothing.
func TestViewListensAsServeDoesAndAnswersOnlyItsHostNames(t *testing.T) {
	t.Parallel()
	store := t.TempDir()
	if code, _, errOut := runCLI(t, "demo", "--store", store, "--fsync", "interval"); code != 0 {
		t.Fatalf("demo: %s", errOut)
	}
	export := filepath.Join(t.TempDir(), "demo.flx")
	if code, _, errOut := runCLI(t, "export", "--store", store, "--out", export); code != 0 {
		t.Fatalf("export: %s", errOut)
	}
	for _, form := range []string{":%d", "localhost:%d", "%d"} {
		port := freePort(t)
		listen := fmt.Sprintf(form, port)
		url, errOut := startViewOut(t, "--file", export, "--listen", listen)
		if got := tcpListeners(t, port); len(got) != 1 || got[0] != "127.0.0.1" {
			t.Errorf("view --listen %s listens on %v, want 127.0.0.1 only", listen, got)
		}
		if want := fmt.Sprintf("http://127.0.0.1:%d/", port); url != want {
			t.Errorf("view --listen %s serves %s, want %s", listen, url, want)
		}
		if strings.Contains(errOut.String(), "beyond this machine") {
			t.Errorf("view --listen %s says %q of an address on loopback", listen, errOut.String())
		}
	}
	for _, args := range [][]string{
		{"view", "--file", export, "--listen", "0.0.0.0:0"},
		{"serve", "--services", "meter", "--store", t.TempDir(), "--listen", "0.0.0.0:0"},
	} {
		if code, _, errOut := runCLI(t, args...); code != 2 || !strings.Contains(errOut, "can be reached from other hosts: add --allow-remote to mean it") {
			t.Errorf("factline %v: exit %d, %q; want 2 saying --allow-remote is needed", args, code, errOut)
		}
	}

	url := startView(t, "--file", export, "--allow-host", "fl.example")
	for host, want := range map[string]int{
		"127.0.0.1":         http.StatusOK,
		"localhost:7070":    http.StatusOK,
		"[::1]:7070":        http.StatusOK,
		"fl.example":        http.StatusOK,
		"rebound.example":   http.StatusMisdirectedRequest,
		"127.0.0.1.nip.io":  http.StatusMisdirectedRequest,
		"fl.example.evil.x": http.StatusMisdirectedRequest,
	} {
		req, err := http.NewRequest(http.MethodGet, url+"api/suites", nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Host = host
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("Host %s: status %d, want %d (%.200s)", host, resp.StatusCode, want, body)
		}
		if want != http.StatusOK && (strings.Contains(string(body), "demo") || !strings.Contains(string(body), "does not answer to the host")) {
			t.Errorf("Host %s: the refusal says %q; it must say why and show nothing of the log", host, body)
		}
	}
}
