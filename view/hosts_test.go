package view_test

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/factline/factline/view"
)

// The pages answer only to the host names the viewer is reached by on
// this machine (127.0.0.1, localhost, [::1], in any case, with or without
// a port or a trailing dot) and to the ones it was given. Any other Host,
// or none, is refused with 421 and a plain message, before any page,
// report or event stream: a web page elsewhere that rebinds its own name
// to the viewer's address (DNS rebinding) reads nothing of the log.
func TestThePagesAnswerOnlyToTheirOwnHostNames(t *testing.T) {
	export := filepath.Join(t.TempDir(), "empty.flx")
	if err := os.WriteFile(export, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := view.New(view.Config{File: export, Hosts: []string{"", "Viewer.Example"}})
	if err != nil {
		t.Fatal(err)
	}
	h := newLoopbackServer(t, s)
	for _, c := range []struct {
		host   string
		answer bool
	}{
		{"127.0.0.1", true}, {"127.0.0.1:7070", true}, {"localhost:7070", true}, {"LOCALHOST.", true},
		{"[::1]:7070", true}, {"[::1]", true}, {"viewer.example:8080", true},
		{"rebound.example", false}, {"rebound.example:7070", false}, {"127.0.0.1.rebound.example", false},
		{"viewer.example.rebound.example", false}, {"0.0.0.0:7070", false}, {"[::2]:7070", false},
	} {
		for _, path := range []string{"/", "/api/suites", "/events"} {
			status, body := getWithHost(t, h, path, c.host)
			refused := status == http.StatusMisdirectedRequest
			if refused == c.answer {
				t.Errorf("Host %q, %s: status %d, want it answered: %v", c.host, path, status, c.answer)
			}
			if refused && !strings.Contains(body, `does not answer to the host "`+c.host+`"`) {
				t.Errorf("Host %q, %s: the refusal says %q", c.host, path, body)
			}
		}
	}
	// HTTP/1.0 without a Host header names no host: refused too.
	conn, err := net.Dial("tcp", h)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := io.WriteString(conn, "GET /api/suites HTTP/1.0\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMisdirectedRequest {
		t.Errorf("a request without a Host: status %d, want 421", resp.StatusCode)
	}
}

// newLoopbackServer serves h on 127.0.0.1 for the test and returns its
// address.
func newLoopbackServer(t *testing.T, h http.Handler) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: h}
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { _ = srv.Close() })
	return l.Addr().String()
}

// getWithHost fetches path from addr naming host in the Host header.
func getWithHost(t *testing.T, addr, path, host string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, "http://"+addr+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Host = host
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(body)
}
