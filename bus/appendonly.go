package bus

import (
	"context"
	"fmt"
	"strings"

	"github.com/nats-io/nats.go/jetstream"
)

// NotAppendOnlyError reports a stream that factline creates append-only
// (deny_delete, deny_purge) but that exists without those settings, made
// by an earlier version or by hand: its messages can still be deleted or
// purged through the JetStream API.
type NotAppendOnlyError struct {
	Stream  string
	Missing []string // "deny_delete", "deny_purge"
}

func (e *NotAppendOnlyError) Error() string {
	return fmt.Sprintf("stream %s lacks %s, so its messages can be deleted or purged: the log is not append-only; "+
		"add them with 'factline setup --append-only' as an identity allowed to manage streams (the server never lets them be removed again)",
		e.Stream, strings.Join(e.Missing, " and "))
}

// notAppendOnly compares the deny settings of an existing stream with
// those factline wants; nil when nothing is missing.
func notAppendOnly(have, want jetstream.StreamConfig) *NotAppendOnlyError {
	var missing []string
	if want.DenyDelete && !have.DenyDelete {
		missing = append(missing, "deny_delete")
	}
	if want.DenyPurge && !have.DenyPurge {
		missing = append(missing, "deny_purge")
	}
	if len(missing) == 0 {
		return nil
	}
	return &NotAppendOnlyError{Stream: want.Name, Missing: missing}
}

// factsConfig is the FACTS stream configuration factline creates.
func (b *Bus) factsConfig() jetstream.StreamConfig {
	for _, c := range b.streamConfigs() {
		if c.Name == FactsStream {
			return c
		}
	}
	panic("bus: no FACTS stream configuration")
}

// CheckAppendOnly asks the server whether FACTS refuses message deletes
// and purges: nil, or a *NotAppendOnlyError naming what is missing and how
// to add it.
func (b *Bus) CheckAppendOnly(ctx context.Context) error {
	cfg, err := b.storedFactsConfig(ctx)
	if err != nil {
		return err
	}
	if na := notAppendOnly(cfg, b.factsConfig()); na != nil {
		return na
	}
	return nil
}

// MakeAppendOnly adds deny_delete and deny_purge to an existing FACTS
// stream, leaving every other setting as it is. It is the operator's
// explicit step for a stream made before the log was append-only (Open
// only reports it): the server never lets the settings be removed again,
// so retiring old suites then means exporting and starting a new stream
// (docs/operations.md).
func (b *Bus) MakeAppendOnly(ctx context.Context) error {
	_, err := b.editFacts(ctx, "make append-only", func(cfg *jetstream.StreamConfig) (bool, error) {
		if notAppendOnly(*cfg, b.factsConfig()) == nil {
			return false, nil
		}
		cfg.DenyDelete, cfg.DenyPurge = true, true
		return true, nil
	})
	return err
}
