package main

import (
	"fmt"
	"net"
	"strconv"
	"strings"
)

// listenPlan is how 'serve --listen' serves a store to other processes.
type listenPlan struct {
	addr     string // host:port to bind (port -1: a free one)
	loopback bool   // only this machine can reach addr
	auth     bool   // clients must hold the store's credential
}

// planListen reads --listen, --allow-remote and --no-auth. A bare port
// means loopback; an address other hosts can reach must be asked for
// with --allow-remote, and is never served without the credential.
func planListen(listen string, allowRemote, noAuth bool) (listenPlan, error) {
	if _, err := strconv.Atoi(listen); err == nil {
		listen = ":" + listen
	}
	host, port, err := net.SplitHostPort(listen)
	if err != nil {
		return listenPlan{}, usageError{fmt.Sprintf("--listen %q: want PORT, :PORT or HOST:PORT", listen)}
	}
	p, err := strconv.Atoi(port)
	if err != nil || p < 0 || p > 65535 {
		return listenPlan{}, usageError{fmt.Sprintf("--listen %q: the port must be a number from 0 (any free port) to 65535", listen)}
	}
	if p == 0 {
		p = -1 // nats-server's "any free port"; its 0 means 4222
	}
	loopback := false
	switch ip := net.ParseIP(host); {
	case host == "" || host == "localhost":
		host, loopback = "127.0.0.1", true
	case ip != nil && ip.IsLoopback():
		loopback = true
	}
	plan := listenPlan{addr: net.JoinHostPort(host, strconv.Itoa(p)), loopback: loopback, auth: !noAuth}
	switch {
	case !loopback && !allowRemote:
		return listenPlan{}, usageError{fmt.Sprintf("--listen %s can be reached from other hosts: add --allow-remote to mean it "+
			"(clients there still need the store's credential; the traffic is not encrypted), or listen on a bare port for this machine only", listen)}
	case !loopback && noAuth:
		return listenPlan{}, usageError{"--no-auth is for loopback only: an address other hosts can reach is never served without the credential"}
	}
	return plan, nil
}

// shellWord quotes s for a shell when it needs it, so a printed command
// can be pasted as it is.
func shellWord(s string) string {
	if s != "" && !strings.ContainsAny(s, " \t\n'\"\\$`!*?[]{}()<>|&;#~") {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
