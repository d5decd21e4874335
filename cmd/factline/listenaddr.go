package main

import (
	"fmt"
	"net"
	"strconv"
	"strings"
)

// listenAddr is a --listen (or serve's --metrics) address read by the
// one rule 'serve' and 'view' share
// (docs/operations.md#listen-addresses): PORT, :PORT and
// localhost:PORT mean this machine only (127.0.0.1), as does any loopback
// address; any other host (0.0.0.0, ::, a LAN address, a host name) can
// be reached from other hosts, and is served only when --allow-remote
// asks for it.
type listenAddr struct {
	flag     string // the flag it was given to, for messages
	host     string // the host to bind
	port     int    // 0: any free port
	given    string // the host as given ("" for a bare port)
	loopback bool   // only this machine can reach it
}

// parseListen reads a --listen address by the shared rule.
func parseListen(listen string) (listenAddr, error) { return parseAddr("--listen", listen) }

// parseAddr reads the address given to flag by the shared rule.
func parseAddr(flag, listen string) (listenAddr, error) {
	if _, err := strconv.Atoi(listen); err == nil {
		listen = ":" + listen
	}
	host, port, err := net.SplitHostPort(listen)
	if err != nil {
		return listenAddr{}, usageError{fmt.Sprintf("%s %q: want PORT, :PORT or HOST:PORT", flag, listen)}
	}
	p, err := strconv.Atoi(port)
	if err != nil || p < 0 || p > 65535 {
		return listenAddr{}, usageError{fmt.Sprintf("%s %q: the port must be a number from 0 (any free port) to 65535", flag, listen)}
	}
	a := listenAddr{flag: flag, host: host, port: p, given: host}
	switch ip := net.ParseIP(host); {
	case host == "" || strings.EqualFold(host, "localhost"):
		a.host, a.loopback = "127.0.0.1", true
	case ip != nil && ip.IsLoopback():
		a.loopback = true
	}
	return a, nil
}

// metricsAddr reads --metrics by --listen's rule, before anything
// starts: an address no listener can bind is a usage error, and so is one
// other hosts can reach that --allow-remote did not ask for (found only
// once the store was open and the services probed, either was a failure,
// exit 1, of a call that was wrong). :9464 bound every interface, which
// told anyone who reached it what the fleet runs and how its store fares.
// It returns the address to bind ("" for none).
func metricsAddr(addr string, allowRemote bool) (string, error) {
	if addr == "" {
		return "", nil
	}
	a, err := parseAddr("--metrics", addr)
	if err != nil {
		return "", err
	}
	if !a.loopback && !allowRemote {
		return "", a.refuseRemote(addr, "whoever reaches it reads which services run and how the store fares")
	}
	return a.String(), nil
}

// String is the address to bind, host:port.
func (a listenAddr) String() string { return net.JoinHostPort(a.host, strconv.Itoa(a.port)) }

// refuseRemote is the usage error for an address other hosts can reach
// that --allow-remote did not ask for; reached says what whoever reaches
// it can do.
func (a listenAddr) refuseRemote(listen, reached string) error {
	return usageError{fmt.Sprintf("%s %s can be reached from other hosts: add --allow-remote to mean it "+
		"(%s; the traffic is not encrypted), or listen on a bare port for this machine only", a.flag, listen, reached)}
}
