package tools

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/factline/factline/cases"
	"github.com/factline/factline/events"
)

// sink is a real HTTP server on loopback that counts the requests it sees
// and the Idempotency-Key headers they carried.
type sink struct {
	*httptest.Server
	mu   sync.Mutex
	hits int
	keys []string
}

func newSink(t *testing.T, network, addr string, h http.HandlerFunc) *sink {
	t.Helper()
	s := &sink{}
	s.Server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		s.mu.Lock()
		s.hits++
		s.keys = append(s.keys, r.Header.Get("Idempotency-Key"))
		s.mu.Unlock()
		if h != nil {
			h(w, r)
			return
		}
		_, _ = io.WriteString(w, `{"ok":true}`)
	}))
	l, err := net.Listen(network, addr)
	if err != nil {
		t.Fatalf("listen %s %s: %v", network, addr, err)
	}
	s.Listener = l
	s.Start()
	t.Cleanup(s.Close)
	return s
}

func (s *sink) seen() (int, []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.hits, append([]string(nil), s.keys...)
}

// httpEnv is an Env whose http_call may reach what allow lists, checked
// the way the runner checks it: by the case's policy.
func httpEnv(t *testing.T, allow ...string) Env {
	t.Helper()
	env, _ := testEnv(t)
	p := &cases.HTTPPolicy{Allow: allow}
	env.AllowURL = p.CheckURL
	env.Operation = "suite/run/t1/call"
	return env
}

func runHTTP(t *testing.T, env Env, url string) Result {
	t.Helper()
	raw, err := json.Marshal(map[string]string{"url": url, "body": `{"sku":7}`})
	if err != nil {
		t.Fatal(err)
	}
	return HTTPCall{}.Run(context.Background(), env, raw)
}

// A URL whose userinfo spells an allowed host and port (the part before
// the @) is refused: the request would go to the host after the @, which
// no entry allows.
func TestHTTPCallRefusesUserinfo(t *testing.T) {
	allowed := newSink(t, "tcp", "127.0.0.1:0", nil)
	other := newSink(t, "tcp", "127.0.0.1:0", nil)
	env := httpEnv(t, allowed.URL)
	res := runHTTP(t, env, allowed.URL+"@"+strings.TrimPrefix(other.URL, "http://")+"/x")
	if n, _ := other.seen(); n != 0 {
		t.Fatalf("the unlisted server got %d requests", n)
	}
	if res.Err == nil || res.Err.Code != CodeURLNotAllowed || res.Outcome != events.OutcomeNotApplied {
		t.Fatalf("got %+v (err %+v), want %s and not_applied", res, res.Err, CodeURLNotAllowed)
	}
	if !strings.Contains(res.Err.Message, "userinfo") {
		t.Fatalf("the refusal does not say why: %q", res.Err.Message)
	}
}

// A redirect is the call's answer: it is never followed, so neither the
// body nor the Idempotency-Key reaches the host it points at. A 307 says
// the endpoint did not act on the request: the call was not applied.
func TestHTTPCallDoesNotFollowRedirects(t *testing.T) {
	other := newSink(t, "tcp", "127.0.0.1:0", nil)
	allowed := newSink(t, "tcp", "127.0.0.1:0", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, other.URL+"/steal", http.StatusTemporaryRedirect)
	})
	env := httpEnv(t, allowed.URL+"/")
	res := runHTTP(t, env, allowed.URL+"/orders")
	if n, keys := other.seen(); n != 0 {
		t.Fatalf("the redirect was followed: the unlisted server got %d requests, keys %q", n, keys)
	}
	if n, keys := allowed.seen(); n != 1 || keys[0] != env.Operation {
		t.Fatalf("the allowed server got %d requests, keys %q, want 1 with %q", n, keys, env.Operation)
	}
	if res.Outcome != events.OutcomeNotApplied || res.Err == nil || res.Err.Code != CodeHTTPRedirect {
		t.Fatalf("got outcome %q err %+v, want not_applied %s", res.Outcome, res.Err, CodeHTTPRedirect)
	}
	if !strings.Contains(res.Output, "HTTP 307") || !strings.Contains(res.Output, "Location: "+other.URL+"/steal") {
		t.Fatalf("the output does not record the status and Location: %q", res.Output)
	}
}

// A 303 (or 302) is what a server sends after acting on a POST to point
// at its result: the call may have taken effect, so its outcome is
// unknown, for the runner to reconcile; it is not followed either.
func TestHTTPCallSeeOtherIsUnknown(t *testing.T) {
	other := newSink(t, "tcp", "127.0.0.1:0", nil)
	for _, code := range []int{http.StatusFound, http.StatusSeeOther} {
		allowed := newSink(t, "tcp", "127.0.0.1:0", func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, other.URL+"/result", code)
		})
		res := runHTTP(t, httpEnv(t, allowed.URL+"/"), allowed.URL+"/orders")
		if res.Outcome != events.OutcomeUnknown || res.Err == nil || res.Err.Code != CodeOutcomeUnknown {
			t.Fatalf("%d: got outcome %q err %+v, want unknown", code, res.Outcome, res.Err)
		}
	}
	if n, _ := other.seen(); n != 0 {
		t.Fatalf("a redirect was followed: the unlisted server got %d requests", n)
	}
}

// An IPv6 literal matches its entry in any spelling of the same address,
// and the call reaches the server there.
func TestHTTPCallIPv6LiteralInAnySpelling(t *testing.T) {
	s := newSink(t, "tcp6", "[::1]:0", nil)
	port := s.Listener.Addr().(*net.TCPAddr).Port
	env := httpEnv(t, "http://[::1]:"+strconv.Itoa(port)+"/")
	res := runHTTP(t, env, "http://[0:0:0:0:0:0:0:1]:"+strconv.Itoa(port)+"/orders")
	if res.Err != nil || res.Outcome != events.OutcomeApplied {
		t.Fatalf("got outcome %q err %+v, want applied", res.Outcome, res.Err)
	}
	if n, _ := s.seen(); n != 1 {
		t.Fatalf("the server got %d requests, want 1", n)
	}
}

// An answer longer than the output cap is cut, and the mark counts the
// bytes of the answer not shown: all of them, not only those of the part
// the call read (a 200,000-byte answer once read "4105 more bytes").
// Answers with and without a Content-Length are counted alike.
func TestHTTPCallCutCountsTheWholeAnswer(t *testing.T) {
	const size = 200000
	for _, chunked := range []bool{false, true} {
		s := newSink(t, "tcp", "127.0.0.1:0", func(w http.ResponseWriter, r *http.Request) {
			if !chunked {
				w.Header().Set("Content-Length", strconv.Itoa(size))
			}
			for range size / 1000 {
				_, _ = io.WriteString(w, strings.Repeat("x", 1000))
				if chunked {
					w.(http.Flusher).Flush()
				}
			}
		})
		env := httpEnv(t, s.URL+"/")
		reg, err := NewRegistry([]string{"http_call"})
		if err != nil {
			t.Fatal(err)
		}
		tool, args, bad := reg.Check("http_call", `{"url":"`+s.URL+`/big","body":"{}"}`)
		if bad != nil {
			t.Fatalf("check: %+v", bad)
		}
		res := reg.Run(context.Background(), env, tool, args)
		if !res.Truncated || res.Err != nil || res.Outcome != events.OutcomeApplied {
			t.Fatalf("chunked %v: truncated %v, err %+v, outcome %q", chunked, res.Truncated, res.Err, res.Outcome)
		}
		shown, mark, ok := strings.Cut(res.Output, "\n[output cut: ")
		if !ok {
			t.Fatalf("chunked %v: no cut mark: %.100q", chunked, res.Output)
		}
		body := strings.TrimPrefix(shown, "HTTP 200\n")
		want := "" + strconv.Itoa(size-len(body)) + " more bytes not shown]"
		if mark != want {
			t.Errorf("chunked %v: the mark says %q, want %q (%d of the answer's %d bytes shown)", chunked, mark, want, len(body), size)
		}
	}
}
