package main

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// --metrics reads its address by --listen's rule: a bare port (or :PORT)
// is this machine only, and an address other hosts can reach is served
// only when --allow-remote asks for it. /metrics and /healthz tell whoever
// reaches them which services run and how the store fares; :9090 bound
// every interface.
func TestServeMetricsIsLoopbackUnlessAllowRemote(t *testing.T) {
	t.Parallel()
	port := freePort(t)
	srv := startServe(t, "--services", "meter", "--store", t.TempDir(), "--metrics", fmt.Sprintf(":%d", port))
	if !strings.Contains(srv.out.String(), "serving meter") {
		t.Fatalf("serve --metrics :%d: %q %q", port, srv.out.String(), srv.errOut.String())
	}
	if got := tcpListeners(t, port); len(got) != 1 || got[0] != "127.0.0.1" {
		t.Errorf("--metrics :%d listens on %v, want 127.0.0.1 only", port, got)
	}
	srv.stop()

	remote := freePort(t)
	for _, addr := range []string{fmt.Sprintf("0.0.0.0:%d", remote), fmt.Sprintf("[::]:%d", remote)} {
		store := filepath.Join(t.TempDir(), "s")
		// Started as a serve, not run to its end: one that takes the
		// address serves until stopped.
		refused := startServe(t, "--services", "meter", "--store", store, "--metrics", addr)
		code, out, errOut := refused.stop(), refused.out.String(), refused.errOut.String()
		if code != 2 || out != "" || !strings.Contains(errOut, "--metrics") || !strings.Contains(errOut, "--allow-remote") {
			t.Errorf("serve --metrics %s: exit %d, stdout %q, stderr %q; want 2 naming --metrics and --allow-remote", addr, code, out, errOut)
		}
		if _, err := os.Stat(store); !os.IsNotExist(err) {
			t.Errorf("--metrics %s: the store was opened before the flag was checked", addr)
		}
	}
	if conn, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", remote)); err == nil {
		conn.Close()
		t.Errorf("a refused --metrics left port %d open", remote)
	}

	srv = startServe(t, "--services", "meter", "--store", t.TempDir(), "--metrics", fmt.Sprintf("0.0.0.0:%d", remote), "--allow-remote")
	if !strings.Contains(srv.out.String(), "serving meter") {
		t.Fatalf("serve --metrics 0.0.0.0:%d --allow-remote: %q %q", remote, srv.out.String(), srv.errOut.String())
	}
	// Go binds 0.0.0.0 as the dual-stack wildcard, which the kernel lists
	// as ::.
	if got := tcpListeners(t, remote); len(got) != 1 || (got[0] != "0.0.0.0" && got[0] != "::") {
		t.Errorf("--metrics 0.0.0.0:%d --allow-remote listens on %v, want every interface", remote, got)
	}
}
