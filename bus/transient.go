package bus

import (
	"context"
	"errors"
	"strings"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// JetStream error codes that say the bus itself failed, not the work, and
// that nats.go does not export (those it does are used by name: stream not
// found, JetStream not enabled, not enabled for the account).
const (
	errCodeAccountResources jetstream.ErrorCode = 10002 // resource limits exceeded for account
	errCodeInsufficient     jetstream.ErrorCode = 10023 // insufficient resources (a server's store limit)
	errCodeMemoryResources  jetstream.ErrorCode = 10028 // insufficient memory resources available
	errCodeStorageResources jetstream.ErrorCode = 10047 // insufficient storage resources available
	errCodeStoreFailed      jetstream.ErrorCode = 10077 // storing a message failed: {err}
)

// Transient reports whether err is a failure of the bus itself, which
// passes on its own or once an operator acts, rather than of the work: a
// NATS connection reconnecting, a request timing out while a cluster
// elects a new leader, no responders for a moment, a stream a restarted
// server has not recovered yet (or lost), a store that is full. Work that
// fails so is handed back and tried again, never ended, and a consumer
// retries it without spending the message's delivery budget (see
// Consume).
func Transient(err error) bool {
	if err == nil {
		return false
	}
	for _, t := range []error{nats.ErrTimeout, nats.ErrNoResponders, nats.ErrDisconnected, nats.ErrConnectionReconnecting,
		nats.ErrConnectionClosed, jetstream.ErrNoStreamResponse, jetstream.ErrStreamNotFound, context.DeadlineExceeded} {
		if errors.Is(err, t) {
			return true
		}
	}
	if StoreFull(err) {
		return true
	}
	var dg *DirectGetError
	if errors.As(err, &dg) {
		// A direct get answered "unavailable" (no leader for a moment) or
		// "timeout": the server will answer again.
		return dg.Status == "503" || dg.Status == "408"
	}
	if apiErr := asAPIError(err); apiErr != nil {
		switch {
		case apiErr.Code == 503:
			return true // e.g. JetStream temporarily unavailable during an election
		case apiErr.ErrorCode == jetstream.JSErrCodeStreamNotFound,
			// A server that ran out of disk turns JetStream off.
			apiErr.ErrorCode == jetstream.JSErrCodeJetStreamNotEnabled,
			apiErr.ErrorCode == jetstream.JSErrCodeJetStreamNotEnabledForAccount:
			return true
		}
	}
	return false
}

// StoreFull reports whether err says that JetStream refused a write for
// want of space: a server's store limit (max_file_store, by default
// three quarters of the disk free when it started), an account's storage
// limit or a stream's size limit. Nothing is lost: the writer keeps its work until space is freed. (A
// server whose disk fills before its own limit is reached turns JetStream
// off instead; that answers "JetStream not enabled", which Transient
// covers.)
func StoreFull(err error) bool {
	apiErr := asAPIError(err)
	if apiErr == nil {
		return false
	}
	switch apiErr.ErrorCode {
	case errCodeAccountResources, errCodeInsufficient, errCodeMemoryResources, errCodeStorageResources:
		return true
	case errCodeStoreFailed:
		d := strings.ToLower(apiErr.Description)
		return strings.Contains(d, "maximum bytes") || strings.Contains(d, "maximum messages") ||
			strings.Contains(d, "no space") || strings.Contains(d, "resources")
	}
	return false
}

// asAPIError is the JetStream API error err carries, from either of
// nats.go's APIs (nil when it carries none): the jetstream package's, or
// the legacy one, whose errors are of another type with the same fields.
// KV watches (a model limit's slot listing) and push subscriptions still
// make their consumers through the legacy API, so its answers (a 503
// while a cluster replaces a node, a full store) must count the same.
func asAPIError(err error) *jetstream.APIError {
	var apiErr *jetstream.APIError
	if errors.As(err, &apiErr) {
		return apiErr
	}
	var legacy *nats.APIError
	if errors.As(err, &legacy) {
		return &jetstream.APIError{Code: legacy.Code, ErrorCode: jetstream.ErrorCode(legacy.ErrorCode), Description: legacy.Description}
	}
	return nil
}
