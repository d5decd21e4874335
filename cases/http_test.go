package cases

import (
	"errors"
	"strings"
	"testing"
)

// An allow entry is a parsed URL: a call is under it when its scheme,
// host and port are the entry's and its path starts with the entry's
// path, segment by segment. A string prefix is not enough: the URL's
// parts decide where the request goes.
func TestHTTPAllowComparesParsedURLs(t *testing.T) {
	for _, c := range []struct {
		allow, url string
		want       bool
	}{
		// userinfo: the host is what follows the @
		{"http://127.0.0.1:18082", "http://127.0.0.1:18082@127.0.0.2:18083/x", false},
		{"http://127.0.0.1:18082/", "http://u:p@127.0.0.1:18082/x", false},
		// the host and port end where the URL's authority ends
		{"http://localhost", "http://localhost.evil.example/x", false},
		{"http://127.0.0.1:1808", "http://127.0.0.1:18082/x", false},
		{"http://a.example", "http://a.example%2eevil.example/", false},
		// hosts are compared case-insensitively; percent-encoded hosts are refused
		{"http://localhost:8080/", "http://LOCALHOST:8080/x", true},
		{"http://LocalHost:8080/", "http://localhost:8080/x", true},
		{"http://localhost:8080/", "http://%6cocalhost:8080/x", false},
		{"HTTP://localhost:8080/", "http://localhost:8080/x", true},
		// default ports are explicit
		{"http://a.example/", "http://a.example:80/x", true},
		{"https://a.example:443/", "https://a.example/x", true},
		{"http://a.example/", "http://a.example:8080/x", false},
		{"http://a.example/", "https://a.example/x", false},
		// IPv6 literals in canonical form
		{"http://[::1]:9000/", "http://[0:0:0:0:0:0:0:1]:9000/x", true},
		{"http://[0:0::1]:9000", "http://[::1]:9000/x", true},
		{"http://[::1]:9000/", "http://[::2]:9000/x", false},
		// paths on segment boundaries
		{"http://a.example/api", "http://a.example/api", true},
		{"http://a.example/api", "http://a.example/api/x", true},
		{"http://a.example/api/", "http://a.example/api/x", true},
		{"http://a.example/api", "http://a.example/apix", false},
		{"http://a.example/api", "http://a.example/", false},
		// dot segments, plain or encoded, are refused
		{"http://a.example/api/", "http://a.example/api/../admin", false},
		{"http://a.example/api/", "http://a.example/api/%2e%2e/admin", false},
		{"http://a.example/api/", "http://a.example/api/%2E%2e/admin", false},
		{"http://a.example/api/", "http://a.example/api/./x", false},
		{"http://a.example/api/", "http://a.example/api%2f..%2fadmin", false},
		{"http://a.example/api/", "http://a.example/api/..;/admin", false},
		// a query on an allowed path is fine; a fragment is refused
		{"http://a.example/api", "http://a.example/api/x?y=1", true},
		{"http://a.example/api", "http://a.example/api/x#f", false},
	} {
		p := &HTTPPolicy{Allow: []string{c.allow}}
		if got := p.Allows(c.url); got != c.want {
			t.Errorf("allow %s, call %s: allowed %v, want %v", c.allow, c.url, got, c.want)
		}
	}
}

// An allow entry that is not a plain http(s) URL is refused when the case
// loads, naming the file, the line and the entry.
func TestHTTPAllowEntriesAreCheckedWhenTheCaseLoads(t *testing.T) {
	for _, c := range []struct{ entry, why string }{
		{"ftp://a.example/", "http or https"},
		{"a.example/api", "http or https"},
		{"http://u:p@a.example/", "userinfo"},
		{"http://a.example/api?x=1", "query"},
		{"http://a.example/api#x", "fragment"},
		{"http://a.example/../b", "dot segment"},
		{"http://a%2eexample/", "percent-encoded"},
		{"http://a.example:99999/", "port"},
		{"http:///api", "host"},
		{"http://a.example./", "trailing dot"},
	} {
		yml := "id: a\ninstruction: x\nhttp:\n  allow:\n    - http://ok.example/\n    - '" + c.entry + "'\n"
		_, err := ParseCase("bad.yaml", []byte(yml))
		var ce *Error
		if !errors.As(err, &ce) {
			t.Errorf("%s: got %v, want a case error", c.entry, err)
			continue
		}
		if ce.File != "bad.yaml" || ce.Line != 6 || ce.Field != "http.allow[1]" || !strings.Contains(ce.Msg, c.why) {
			t.Errorf("%s: got %q (file %q line %d field %q), want bad.yaml line 6 http.allow[1] saying %q", c.entry, err, ce.File, ce.Line, ce.Field, c.why)
		}
	}
}
