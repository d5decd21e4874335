package main

import (
	"encoding/hex"
	"net"
	"os"
	"strconv"
	"strings"
	"testing"
)

// tcpListeners lists the addresses the kernel has TCP sockets listening
// on at port (from /proc/net/tcp and tcp6): what is bound, whatever the
// program says about itself.
func tcpListeners(t *testing.T, port int) []string {
	t.Helper()
	var out []string
	for _, file := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		data, err := os.ReadFile(file)
		if err != nil {
			if file == "/proc/net/tcp6" && os.IsNotExist(err) {
				continue // no IPv6 on this host
			}
			t.Fatal(err)
		}
		for _, line := range strings.Split(string(data), "\n")[1:] {
			f := strings.Fields(line)
			if len(f) < 4 || f[3] != "0A" { // 0A: LISTEN
				continue
			}
			hostHex, portHex, ok := strings.Cut(f[1], ":")
			if p, err := strconv.ParseUint(portHex, 16, 16); !ok || err != nil || int(p) != port {
				continue
			}
			raw, err := hex.DecodeString(hostHex)
			if err != nil || len(raw)%4 != 0 {
				t.Fatalf("%s: address %q", file, f[1])
			}
			// The kernel prints each 32-bit word in host (little-endian) order.
			for i := 0; i < len(raw); i += 4 {
				raw[i], raw[i+1], raw[i+2], raw[i+3] = raw[i+3], raw[i+2], raw[i+1], raw[i]
			}
			out = append(out, net.IP(raw).String())
		}
	}
	return out
}
