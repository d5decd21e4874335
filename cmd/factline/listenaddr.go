package main

import (
	"fmt"
	"net"
	"strconv"
	"strings"
)

// listenAddr is a --listen address read by the one rule 'serve' and
// 'view' share (docs/operations.md#listen-addresses): PORT, :PORT and
// localhost:PORT mean this machine only (127.0.0.1), as does any loopback
// address; any other host (0.0.0.0, ::, a LAN address, a host name) can
// be reached from other hosts, and is served only when --allow-remote
// asks for it.
type listenAddr struct {
	host     string // the host to bind
	port     int    // 0: any free port
	given    string // the host as given ("" for a bare port)
	loopback bool   // only this machine can reach it
}

// parseListen reads a --listen address by the shared rule.
func parseListen(listen string) (listenAddr, error) {
	if _, err := strconv.Atoi(listen); err == nil {
		listen = ":" + listen
	}
	host, port, err := net.SplitHostPort(listen)
	if err != nil {
		return listenAddr{}, usageError{fmt.Sprintf("--listen %q: want PORT, :PORT or HOST:PORT", listen)}
	}
	p, err := strconv.Atoi(port)
	if err != nil || p < 0 || p > 65535 {
		return listenAddr{}, usageError{fmt.Sprintf("--listen %q: the port must be a number from 0 (any free port) to 65535", listen)}
	}
	a := listenAddr{host: host, port: p, given: host}
	switch ip := net.ParseIP(host); {
	case host == "" || strings.EqualFold(host, "localhost"):
		a.host, a.loopback = "127.0.0.1", true
	case ip != nil && ip.IsLoopback():
		a.loopback = true
	}
	return a, nil
}

// checkMetricsAddr refuses a --metrics address no listener can bind, as
// a usage error before anything starts: found only once the store was
// open and the services probed, it was a failure (exit 1) of a call that
// was wrong. The address is bound as given (docs/operations.md).
func checkMetricsAddr(addr string) error {
	if addr == "" {
		return nil
	}
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return usageError{fmt.Sprintf("--metrics %q: want HOST:PORT or :PORT, such as 127.0.0.1:9464", addr)}
	}
	if p, err := strconv.Atoi(port); err != nil || p < 0 || p > 65535 {
		return usageError{fmt.Sprintf("--metrics %q: the port must be a number from 0 (any free port) to 65535", addr)}
	}
	return nil
}

// String is the address to bind, host:port.
func (a listenAddr) String() string { return net.JoinHostPort(a.host, strconv.Itoa(a.port)) }

// refuseRemote is the usage error for an address other hosts can reach
// that --allow-remote did not ask for; reached says what whoever reaches
// it can do.
func (a listenAddr) refuseRemote(listen, reached string) error {
	return usageError{fmt.Sprintf("--listen %s can be reached from other hosts: add --allow-remote to mean it "+
		"(%s; the traffic is not encrypted), or listen on a bare port for this machine only", listen, reached)}
}
