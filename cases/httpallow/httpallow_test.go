package httpallow

import (
	"errors"
	"strings"
	"testing"
)

type verdict struct {
	entry, call string
	allowed     bool
}

func check(t *testing.T, table []verdict) {
	t.Helper()
	for _, c := range table {
		l, err := ParseList([]string{c.entry})
		if err != nil {
			t.Errorf("entry %s: %v", c.entry, err)
			continue
		}
		err = l.Check(c.call)
		if (err == nil) != c.allowed {
			t.Errorf("entry %s, call %s: got %v, want allowed %v", c.entry, c.call, err, c.allowed)
		}
		if err != nil && !errors.Is(err, ErrNotAllowed) {
			t.Errorf("entry %s, call %s: %v does not match ErrNotAllowed", c.entry, c.call, err)
		}
	}
}

func TestUserinfoIsRefused(t *testing.T) {
	check(t, []verdict{
		{"http://127.0.0.1:18082", "http://127.0.0.1:18082@127.0.0.2:18083/x", false},
		{"http://127.0.0.1:18082", "http://u:p@127.0.0.1:18082/x", false},
		{"http://127.0.0.1:18082", "http://@127.0.0.1:18082/x", false},
	})
	if err := (List{}).Check("http://a@b/"); err == nil || !strings.Contains(err.Error(), "userinfo") {
		t.Fatalf("the refusal does not say userinfo: %v", err)
	}
}

func TestTheHostEndsWhereTheAuthorityEnds(t *testing.T) {
	check(t, []verdict{
		{"http://localhost", "http://localhost.evil.example/", false},
		{"http://127.0.0.1:1808", "http://127.0.0.1:18082/", false},
		{"http://a.example", "http://a.example", true},
	})
}

func TestHostsCompareInOneSpelling(t *testing.T) {
	check(t, []verdict{
		{"http://localhost:8080/", "http://LOCALHOST:8080/x", true},
		{"http://LocalHost:8080/", "http://localhost:8080/x", true},
		{"http://[::1]:9000/", "http://[0:0:0:0:0:0:0:1]:9000/x", true},
		{"http://[::1]:9000/", "http://[0000::0001]:9000/x", true},
		{"http://[::1]:9000/", "http://[::2]:9000/x", false},
		{"http://127.0.0.1/", "http://[::ffff:127.0.0.1]/", true}, // Go dials the IPv4 address
		{"http://[2001:db8::1]/", "http://[2001:DB8:0::1]/", true},
	})
}

func TestAmbiguousHostsAreRefused(t *testing.T) {
	for _, call := range []string{
		"http://%6cocalhost/",      // percent-encoded
		"http://loc%C3%A9lhost/",   // percent-encoded, non-ASCII
		"http://[fe80::1%25eth0]/", // a zone
		"http://localhost./",       // trailing dot
		"http://a..example/",       // empty label
		"http://127.1/",            // a short IPv4 form a resolver reads as 127.0.0.1
		"http://0x7f.0.0.1/",       // hex
		"http://2130706433/",       // a 32-bit number
		"http://0177.0.0.1/",       // octal
		"http://exämple.com/",      // IDNA would map it
		"http://ｌｏｃａｌｈｏｓｔ/",        // fullwidth: IDNA maps it to localhost
		"http://[127.0.0.1]/",      // IPv4 in brackets
		"http://:80/",              // no host
		"http:///x",                // no host
		"http:localhost/",          // opaque
	} {
		if _, err := ParseTarget(call); err == nil {
			t.Errorf("%s was accepted", call)
		}
	}
}

func TestDefaultPortsAreExplicit(t *testing.T) {
	check(t, []verdict{
		{"http://a.example/", "http://a.example:80/x", true},
		{"http://a.example:80/", "http://a.example/x", true},
		{"https://a.example/", "https://a.example:443/x", true},
		{"http://a.example/", "http://a.example:8080/x", false},
		{"http://a.example/", "https://a.example/x", false},
		{"https://a.example/", "http://a.example:443/x", false},
		{"http://a.example/", "http://a.example:/x", true}, // an empty port is the default
	})
}

func TestPathsMatchOnSegmentBoundaries(t *testing.T) {
	check(t, []verdict{
		{"http://a.example/api", "http://a.example/api", true},
		{"http://a.example/api", "http://a.example/api/", true},
		{"http://a.example/api", "http://a.example/api/x/y", true},
		{"http://a.example/api/", "http://a.example/api", true},
		{"http://a.example/api", "http://a.example/apix", false},
		{"http://a.example/api", "http://a.example/ap", false},
		{"http://a.example/api", "http://a.example/API", false}, // paths are case-sensitive
		{"http://a.example/api", "http://a.example/%61pi/x", true},
		{"http://a.example/a%20b", "http://a.example/a b/x", true},
		{"http://a.example", "http://a.example/anything", true},
	})
}

func TestDotSegmentsAndEncodedSlashesAreRefused(t *testing.T) {
	for _, call := range []string{
		"http://a.example/api/../admin",
		"http://a.example/api/%2e%2e/admin",
		"http://a.example/api/.%2E/admin",
		"http://a.example/api/./x",
		"http://a.example/api/%2e",
		"http://a.example/api/..;/admin",
		"http://a.example/api%2f..%2fadmin",
		"http://a.example/api%2Fx",
		"http://a.example/api%5cx",
		"http://a.example/api\\x",
		"http://a.example/api//x",
		"http://a.example/api/%00",
		"http://a.example/api/%zz",
	} {
		if _, err := ParseTarget(call); err == nil {
			t.Errorf("%s was accepted", call)
		}
	}
}

func TestACallsQueryIsSentAndIgnoredAFragmentIsRefused(t *testing.T) {
	check(t, []verdict{
		{"http://a.example/api", "http://a.example/api/x?y=1", true},
		{"http://a.example/api", "http://a.example/api?", true},
		{"http://a.example/api", "http://a.example/x?/api", false},
		{"http://a.example/api", "http://a.example/api#f", false},
		{"http://a.example/api", "http://a.example/api#", false},
	})
}

func TestEntriesAreOnlySchemeHostPortAndPath(t *testing.T) {
	for _, c := range []struct{ entry, why string }{
		{"", "empty"},
		{"ftp://a.example/", "http or https"},
		{"a.example/api", "http or https"},
		{"//a.example/api", "http or https"},
		{"http://u:p@a.example/", "userinfo"},
		{"http://a.example/api?x=1", "query"},
		{"http://a.example/api?", "query"},
		{"http://a.example/api#x", "fragment"},
		{"http://a.example/../b", "dot segment"},
		{"http://a%2eexample/", "percent-encoded"},
		{"http://a.example:99999/", "port"},
		{"http://a.example:0/", "port"},
		{"http:///api", "host"},
		{"http://a.example./", "trailing dot"},
	} {
		_, err := ParseEntry(c.entry)
		if err == nil || !strings.Contains(err.Error(), c.why) {
			t.Errorf("%q: got %v, want an error saying %q", c.entry, err, c.why)
		}
	}
}

func TestAnEntryPrintsAsItself(t *testing.T) {
	for raw, want := range map[string]string{
		"HTTP://LocalHost/api/":       "http://localhost:80/api",
		"https://[0:0::1]":            "https://[::1]:443/",
		"http://a.example:8080/a%20b": "http://a.example:8080/a%20b",
	} {
		e, err := ParseEntry(raw)
		if err != nil {
			t.Fatalf("%s: %v", raw, err)
		}
		if e.String() != want {
			t.Errorf("%s printed %s, want %s", raw, e.String(), want)
		}
	}
}
