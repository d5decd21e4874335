package sandbox

import (
	"context"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/factline/factline/sandbox/sandboxtest"
)

// A listener opened inside a container without network is reached by a
// command in the container and by nothing on the host (the host's
// 127.0.0.1 at that port is another socket, if any); the container still
// reaches nothing of the host's. Closing it takes the container's
// loopback down again.
func TestContainerListenInsideIsReachableOnlyFromInside(t *testing.T) {
	a := containerAttempt(t, Environment{})
	ln, err := a.sb.ListenInside(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var served atomic.Int64
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		served.Add(1)
		_, _ = io.WriteString(w, "inside-ok\n")
	}), ReadHeaderTimeout: 10 * time.Second}
	done := make(chan struct{})
	go func() { _ = srv.Serve(ln); close(done) }()
	port := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)

	// busybox's wget crashes in this image; nc speaks HTTP/1.0, after
	// which the server closes the connection and nc exits.
	res := a.run(`{ printf 'GET / HTTP/1.0\r\n\r\n'; sleep 5; } | nc 127.0.0.1 `+port, time.Minute)
	if failed(res) || !strings.Contains(res.Output, "inside-ok") || served.Load() != 1 {
		t.Fatalf("a command in the container did not reach the listener inside it (served %d): %+v", served.Load(), res)
	}

	// From the host the port is not this listener: the request fails or
	// reaches some other socket, never this server.
	client := &http.Client{Timeout: 5 * time.Second}
	if resp, err := client.Get("http://127.0.0.1:" + port + "/"); err == nil {
		_ = resp.Body.Close()
	}
	if served.Load() != 1 {
		t.Fatalf("the host reached the listener inside the container (served %d)", served.Load())
	}

	host := sandboxtest.Listen(t)
	hostPort := strconv.Itoa(host.Addr().(*net.TCPAddr).Port)
	if res := a.run(`echo hi | nc -w 2 127.0.0.1 `+hostPort+` && echo connected`, time.Minute); !failed(res) || host.Accepted() != 0 {
		t.Fatalf("with its endpoint up the container reached the host's 127.0.0.1:%s (accepted %d): %+v", hostPort, host.Accepted(), res)
	}

	_ = srv.Close()
	<-done
	if err := ln.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	if res := a.run(`cat /sys/class/net/lo/flags`, time.Minute); !strings.Contains(res.Output, "0x8\n") {
		t.Errorf("the loopback should be down again after Close: %q", res.Output)
	}
}

// A sandbox without a container has no namespace to listen in.
func TestListenInsideNeedsAContainer(t *testing.T) {
	var sb *Sandbox
	if _, err := sb.ListenInside(context.Background()); err == nil || !strings.Contains(err.Error(), "no container") {
		t.Fatalf("err %v, want one saying there is no container", err)
	}
}

// A container's command gets its standard input and, when asked, no
// address-space limit, as a host command does.
func TestContainerCommandStdinAndAddressSpace(t *testing.T) {
	a := containerAttempt(t, Environment{})
	res, err := a.sb.Run(context.Background(), Command{Script: `cat; echo; ulimit -v`, Dir: a.ws, Stdin: "from-stdin",
		Timeout: time.Minute, OutputCap: 4096, NoAddressSpaceLimit: true})
	if err != nil || failed(res) {
		t.Fatalf("run: %v %+v", err, res)
	}
	if !strings.Contains(res.Output, "from-stdin\nunlimited") {
		t.Fatalf("want the input and no address-space limit, got %q", res.Output)
	}
	res = a.run(`ulimit -v`, time.Minute)
	if want := strconv.FormatUint(testLimits.AddressSpace/1024, 10); strings.TrimSpace(res.Output) != want {
		t.Fatalf("without asking, the limit %s KiB should hold: %q", want, res.Output)
	}
}
