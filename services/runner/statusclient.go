package runner

import "net/http"

// statusClient asks a sink's status endpoint whether an operation took
// effect. It follows no redirect: the lookup reaches only the URL the case
// wrote, and what another host says about the operation settles nothing;
// a 3xx is the lookup's answer, which finds nothing.
var statusClient = &http.Client{
	CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
}
