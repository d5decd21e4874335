package bus

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/factline/factline/internal/urlsecret"
)

// jsClusterNotAvailable is the server's error code (10008) for 503
// "JetStream system temporarily unavailable": what a clustered server
// answers a JetStream request with while its cluster's JetStream has no
// meta leader. The jetstream package names none; the nats package's is of
// another type.
const jsClusterNotAvailable = jetstream.ErrorCode(nats.JSErrCodeJetStreamNotAvailable)

// metaProbeWait bounds the one lookup asked again when opening a bus on a
// cluster got no answer: a node whose cluster has no meta leader answers
// nothing while it waits for its routes and 503 once it waits for an
// election, so a second question often gets the answer that says which.
const metaProbeWait = 2 * time.Second

// ErrNoMetaLeader is matched (errors.Is) by an Open that failed because
// the cluster it reached has no JetStream meta leader, most likely: too few
// of its nodes are up and routed to each other for one to be elected.
var ErrNoMetaLeader = errors.New("the cluster's JetStream has no meta leader")

// noMetaLeaderError explains a bus that could not be opened on a cluster
// without a JetStream meta leader, naming the cluster, the node asked and
// the servers the client knows, and what the operator can do.
type noMetaLeaderError struct {
	err      error  // the lookup's own error
	cluster  string // the cluster the connected node belongs to
	server   string // the connected node's name and URL
	known    string // the servers the client knows (redacted)
	answered bool   // the node answered 503; otherwise it answered nothing
}

func (e *noMetaLeaderError) Error() string {
	var what string
	if e.answered {
		what = fmt.Sprintf("cluster %q has no JetStream meta leader yet: %s answered 503 %q", e.cluster, e.server, "JetStream system temporarily unavailable")
	} else {
		what = fmt.Sprintf("cluster %q has no JetStream meta leader yet, most likely: %s answered nothing, asked twice (the second time for %s), as a node does while its cluster elects none "+
			"(or while the stream has lost the majority of its replicas)", e.cluster, e.server, metaProbeWait)
	}
	return fmt.Sprintf("%v: %s. A cluster forms its JetStream once a majority of its nodes are up and routed to each other "+
		"(a brand-new one may want every node it names in its routes): start the nodes that are down, and check that each node's cluster routes reach the others "+
		"(the client knows %s; docs/operations.md#a-cluster-without-a-meta-leader)", e.err, what, e.known)
}

func (e *noMetaLeaderError) Unwrap() []error { return []error{e.err, ErrNoMetaLeader} }

// whyUnopened explains err, a failure to open the bus, when the server the
// client reached is clustered and its JetStream answers 503 "temporarily
// unavailable" or nothing at all: the cluster has no meta leader, which
// the bare error ("context deadline exceeded") does not say. Any other
// error is returned as it is. It asks the node once more, for at most
// metaProbeWait, and never waits for a leader: an outage is reported, not
// hidden.
func (b *Bus) whyUnopened(ctx context.Context, err error) error {
	cluster := b.nc.ConnectedClusterName()
	if cluster == "" || errors.Is(err, ErrNoMetaLeader) {
		return err
	}
	e := &noMetaLeaderError{err: err, cluster: cluster,
		server: fmt.Sprintf("node %s at %s", b.nc.ConnectedServerName(), urlsecret.URL(b.nc.ConnectedUrlRedacted())),
		known:  urlsecret.URL(strings.Join(b.nc.Servers(), ","))}
	switch {
	case noMetaLeaderAnswer(err):
		e.answered = true
		return e
	case !unanswered(ctx, err):
		return err
	}
	pctx, cancel := context.WithTimeout(ctx, metaProbeWait)
	_, perr := b.js.Stream(pctx, FactsStream)
	cancel()
	switch {
	case noMetaLeaderAnswer(perr):
		e.answered = true
	case unanswered(ctx, perr):
	default:
		// Answered now (found or not): the first answer was lost, or a
		// leader was elected meanwhile; the lookup's error stands.
		return err
	}
	return e
}

// noMetaLeaderAnswer reports whether err is the server's 503 "JetStream
// system temporarily unavailable".
func noMetaLeaderAnswer(err error) bool {
	var api *jetstream.APIError
	return errors.As(err, &api) && api.ErrorCode == jsClusterNotAvailable
}
