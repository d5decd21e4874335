package main

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/factline/factline/bus"
	"github.com/factline/factline/projections"
	"github.com/factline/factline/services/meter"
)

// suitesShown is how many suite names a message lists at most: the
// newest, since the suite a user looks for is most often a recent one.
const suitesShown = 10

// withSuitesHeld adds to err, when it says a suite is not in the log,
// the suites the log does hold: a name mistyped, or a store mistaken,
// shows at once. Any other error, or one the listing itself fails on,
// is returned as it is.
func withSuitesHeld(ctx context.Context, b *bus.Bus, err error) error {
	var ns *meter.NotSubmittedError
	if err == nil || !errors.As(err, &ns) && !errors.Is(err, projections.ErrSuiteUnknown) {
		return err
	}
	suites, lerr := b.SubmittedSuites(ctx)
	if lerr != nil {
		return err
	}
	return fmt.Errorf("%w; %s", err, suitesHeld("the log", suites))
}

// suitesHeld says which suites where holds, oldest first, the newest
// suitesShown of them when there are more.
func suitesHeld(where string, suites []string) string {
	switch n := len(suites); {
	case n == 0:
		return where + " holds no suite"
	case n == 1:
		return where + " holds one suite: " + suites[0]
	case n <= suitesShown:
		return fmt.Sprintf("%s holds %d suites: %s", where, n, strings.Join(suites, ", "))
	default:
		return fmt.Sprintf("%s holds %d suites, the newest %d: %s ('factline replay suites' lists them all)",
			where, n, suitesShown, strings.Join(suites[n-suitesShown:], ", "))
	}
}
