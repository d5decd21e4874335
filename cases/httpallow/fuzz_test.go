package httpallow

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/netip"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"testing"
)

var errNoDial = errors.New("the fuzz target never connects")

// dialled sends a POST to raw through net/http, as http_call does, with a
// transport that records the address it is asked to dial and connects
// nowhere. It returns "" when net/http refused the request before dialling.
func dialled(t *testing.T, raw string) string {
	t.Helper()
	req, err := http.NewRequestWithContext(context.Background(), http.MethodPost, raw, strings.NewReader("{}"))
	if err != nil {
		t.Fatalf("the matcher allowed %q, which net/http cannot send: %v", raw, err)
	}
	var (
		mu   sync.Mutex
		addr string
	)
	tr := &http.Transport{DialContext: func(_ context.Context, _, a string) (net.Conn, error) {
		mu.Lock()
		defer mu.Unlock()
		if addr != "" && addr != a {
			t.Errorf("%q dialled %s and %s", raw, addr, a)
		}
		addr = a
		return nil, errNoDial
	}}
	defer tr.CloseIdleConnections()
	c := &http.Client{Transport: tr, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	if resp, err := c.Do(req); err == nil {
		resp.Body.Close()
		t.Fatalf("%q got an answer from nowhere", raw)
	}
	mu.Lock()
	defer mu.Unlock()
	return addr
}

// FuzzAllowedURLDialsTheEntrysAddress: whatever an entry allows, Go's
// HTTP client connects to the entry's host and port, never elsewhere; and
// an entry parses back from its printed form to itself.
func FuzzAllowedURLDialsTheEntrysAddress(f *testing.F) {
	f.Fuzz(func(t *testing.T, entry, call string) {
		e, err := ParseEntry(entry)
		if err != nil {
			return
		}
		back, err := ParseEntry(e.String())
		if err != nil || !reflect.DeepEqual(back, e) {
			t.Fatalf("%q printed as %q parses back as %+v (%v), want %+v", entry, e.String(), back, err, e)
		}
		if !e.Covers(e) {
			t.Fatalf("%q does not cover itself", entry)
		}
		if (List{e}).Check(call) != nil {
			return
		}
		a := dialled(t, call)
		if a == "" {
			return
		}
		host, port, err := net.SplitHostPort(a)
		if err != nil {
			t.Fatalf("%q dialled %q: %v", call, a, err)
		}
		if ip, err := netip.ParseAddr(host); err == nil {
			host = ip.Unmap().String()
		} else {
			host = strings.ToLower(host)
		}
		if host != e.Host || port != strconv.Itoa(int(e.Port)) {
			t.Fatalf("entry %q allowed %q, which dialled %s, not %s:%d", entry, call, a, e.Host, e.Port)
		}
	})
}
