package bus

import (
	"context"
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

// apiCtx bounds one JetStream API request. Some client calls (consumer
// creation, consumer info) wait for their answer as long as ctx lets them,
// and an answer lost with a stream or meta leader never comes: without a
// bound, a service waits forever with its delivery kept alive by
// heartbeats.
func apiCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, replyTimeout)
}
