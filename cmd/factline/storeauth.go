package main

import (
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

// planListen reads --listen (by parseListen's rule, which view shares),
// --allow-remote and --no-auth. A bare port means loopback; an address
// other hosts can reach must be asked for with --allow-remote, and is
// never served without the credential.
func planListen(listen string, allowRemote, noAuth bool) (listenPlan, error) {
	a, err := parseListen(listen)
	if err != nil {
		return listenPlan{}, err
	}
	p := a.port
	if p == 0 {
		p = -1 // nats-server's "any free port"; its 0 means 4222
	}
	plan := listenPlan{addr: net.JoinHostPort(a.host, strconv.Itoa(p)), loopback: a.loopback, auth: !noAuth}
	switch {
	case !a.loopback && !allowRemote:
		return listenPlan{}, a.refuseRemote(listen, "clients there still need the store's credential")
	case !a.loopback && noAuth:
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
