package bus

import (
	"net"
	"strconv"
	"strings"
)

func splitHostPort(hp string) (string, int, error) {
	host, ps, err := net.SplitHostPort(hp)
	if err != nil {
		return "", 0, err
	}
	port, err := strconv.Atoi(ps)
	if err != nil {
		return "", 0, err
	}
	return host, port, nil
}

func joinComma(ss []string) string { return strings.Join(ss, ",") }
