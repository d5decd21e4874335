package view

import (
	"fmt"
	"net"
	"net/http"
	"slices"
	"strings"
)

// loopbackHosts are the names this machine's loopback answers to: the
// viewer always answers to them.
var loopbackHosts = []string{"127.0.0.1", "localhost", "::1"}

// allowedHosts is the set of names the viewer answers to: the loopback
// names and the extra ones, normalised as hostName normalises a request's.
func allowedHosts(extra []string) map[string]bool {
	out := map[string]bool{}
	for _, h := range append(slices.Clone(loopbackHosts), extra...) {
		if n := hostName(h); n != "" {
			out[n] = true
		}
	}
	return out
}

// hostName is the name part of a Host header (or a configured host),
// lower case, without port, brackets or a trailing dot: "[::1]:7070" is
// "::1", "LocalHost.:80" is "localhost".
func hostName(host string) string {
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	return strings.ToLower(strings.TrimSuffix(host, "."))
}

// refuseHost answers a request for a host the viewer does not serve: 421
// Misdirected Request, in plain words.
func refuseHost(w http.ResponseWriter, host string, allowed map[string]bool) {
	names := make([]string, 0, len(allowed))
	for n := range allowed {
		names = append(names, n)
	}
	slices.Sort(names)
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(http.StatusMisdirectedRequest)
	fmt.Fprintf(w, "factline view does not answer to the host %q: it answers to %s only. "+
		"Open it by one of those names, or start it with --allow-host NAME (docs/viewer.md#listening-and-host-names).\n",
		host, strings.Join(names, ", "))
}
