package main

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"syscall"
)

// listenError says what to do about an address a flag names that cannot
// be listened on: a port another process holds is named as in use, with
// the way to choose another (a free one, or port 0 for any), instead of
// the bare "bind: address already in use".
func listenError(flag, addr string, err error) error {
	if !errors.Is(err, syscall.EADDRINUSE) {
		return fmt.Errorf("%s %s: %w", flag, addr, err)
	}
	host, port, splitErr := net.SplitHostPort(addr)
	if splitErr != nil {
		host, port = "", addr // a bare port
	}
	if host == "" {
		host = "127.0.0.1"
	}
	other := ""
	if p, perr := strconv.Atoi(port); perr == nil && p > 0 && p < 65535 {
		other = fmt.Sprintf("%s %s, ", flag, net.JoinHostPort(host, strconv.Itoa(p+1)))
	}
	return fmt.Errorf("%s %s: the port is in use by another process (another factline, or any program: 'ss -ltnp' names it). "+
		"Stop that one, or choose another port: %sor %s %s for any free one (the address chosen is printed)",
		flag, addr, other, flag, net.JoinHostPort(host, "0"))
}
