// Package kittest helps tests and harnesses build services configured
// through the kit, and check what the kit made of their options.
package kittest

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/factline/factline/bus"
	"github.com/factline/factline/services/kit"
)

// Must returns v, and panics with err when it is set: for building a
// service in a test or a harness whose options are known to be good, so
// that an error can only be a bug in the test itself. A test that checks
// an option's error calls the constructor directly.
func Must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// Refused fails tb unless err is the kit's refusal of option: an
// *kit.OptionError for it, matching kit.ErrInvalidOption and naming it.
// It returns the error for further checks.
func Refused(tb testing.TB, err error, option string) *kit.OptionError {
	tb.Helper()
	var oe *kit.OptionError
	if !errors.Is(err, kit.ErrInvalidOption) || !errors.As(err, &oe) || oe.Option != option {
		tb.Fatalf("err = %v, want option %s refused", err, option)
	}
	if !strings.Contains(err.Error(), option) {
		tb.Errorf("the error %q does not name %s", err, option)
	}
	return oe
}

// Defaults fails tb unless sh is what a service's defaults make: an
// instance named <prefix>-<host>-<pid> (<host>-<pid> without a prefix) and
// the consumer want, by name, filters, delivery limit, on-demand pulls,
// workers and ordering by run.
func Defaults(tb testing.TB, sh *kit.Shell, prefix string, want bus.ConsumerConfig) {
	tb.Helper()
	if name := kit.LocalInstance(prefix); sh.Instance != name {
		tb.Errorf("instance %q, want %q", sh.Instance, name)
	}
	c := sh.Consumer()
	if c.Name != want.Name || !slices.Equal(c.Filters, want.Filters) || c.MaxDeliver != want.MaxDeliver || c.OnDemand != want.OnDemand ||
		c.Workers != want.Workers || c.OrderByRun != want.OrderByRun {
		tb.Errorf("consumer %s %v MaxDeliver %d OnDemand %v Workers %d OrderByRun %v, want %s %v %d %v %d %v",
			c.Name, c.Filters, c.MaxDeliver, c.OnDemand, c.Workers, c.OrderByRun,
			want.Name, want.Filters, want.MaxDeliver, want.OnDemand, want.Workers, want.OrderByRun)
	}
}
