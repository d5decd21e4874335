package kit

import (
	"fmt"
	"os"
)

// LocalInstance names a service instance on this machine when none was
// given: "<prefix>-<host>-<pid>" ("<host>-<pid>" without a prefix). Tests
// and operators read the process id back from the last field. It lives
// here, with the shells, because naming an instance asks the host: the
// vocabulary in package events does no I/O.
func LocalInstance(prefix string) string {
	h, err := os.Hostname()
	if err != nil || h == "" {
		h = "host"
	}
	if prefix == "" {
		return fmt.Sprintf("%s-%d", h, os.Getpid())
	}
	return fmt.Sprintf("%s-%s-%d", prefix, h, os.Getpid())
}
