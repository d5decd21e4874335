package main

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/factline/factline/bus"
	"github.com/factline/factline/events"
	"github.com/factline/factline/projections/replay"
	"github.com/factline/factline/services/meter/measure"
)

// suiteSource is one suite and where its facts are: SUITE (the command's
// --store or --nats) or SUITE@WHERE, WHERE a store directory, an export
// file or a nats:// (tls://) URL (docs/cli.md#compare).
type suiteSource struct {
	given string // as given, for messages
	suite string
	where string // "" for the command's --store or --nats
}

// parseSuiteSource reads SUITE[@WHERE]. A suite name is a subject token
// and never holds '@', so the first '@' splits.
func parseSuiteSource(arg string) (suiteSource, error) {
	s := suiteSource{given: arg, suite: arg}
	if name, where, ok := strings.Cut(arg, "@"); ok {
		if where == "" {
			return s, usageError{fmt.Sprintf("%q: nothing after @: give SUITE@DIR (a store), SUITE@FILE (an export) or SUITE@nats://HOST:PORT", arg)}
		}
		s.suite, s.where = name, where
	}
	if err := events.ValidateToken("suite", s.suite); err != nil {
		return s, usageError{fmt.Sprintf("%q: %v", arg, err)}
	}
	return s, nil
}

// isURL says whether where names a NATS server rather than a path.
func isURL(where string) bool {
	for _, scheme := range []string{"nats://", "tls://", "ws://", "wss://"} {
		if strings.HasPrefix(where, scheme) {
			return true
		}
	}
	return false
}

// load folds the suite's facts from where they are: the command's target
// (base), a store directory, a server or an export file. The messages
// that hold no fact of their subject are left out and returned.
func (s suiteSource) load(ctx context.Context, base *target) (*measure.Log, []bus.BadRecord, error) {
	l, bad, fold := newSuiteFold(s.suite)
	prefix := strings.TrimSuffix(events.SuiteFilter(s.suite), ">")
	// held lists the suites where holds, read only when the suite is not
	// among them.
	var held []string
	missing := func() bool { return l.Submitted == nil }
	var from string
	switch {
	case s.where == "":
		from = "the log"
		var err error
		if held, err = s.read(ctx, base.readsExisting(), fold, missing); err != nil {
			return nil, *bad, err
		}
	case isURL(s.where):
		from = redactURL(s.where)
		t := &target{url: s.where, cred: base.cred, replicas: 1}
		var err error
		if held, err = s.read(ctx, t, fold, missing); err != nil {
			return nil, *bad, err
		}
	default:
		st, err := os.Stat(s.where)
		if err != nil {
			return nil, *bad, fileError{fmt.Errorf("%s: %w (want a store directory, an export file or a nats:// URL after @)", s.given, err)}
		}
		from = s.where
		if st.IsDir() {
			t := (&target{store: s.where}).readsExisting()
			if held, err = s.read(ctx, t, fold, missing); err != nil {
				return nil, *bad, err
			}
			break
		}
		_, err = replay.File(s.where).Each(ctx, func(raw bus.Raw) error {
			if suite, ok := submittedSuite(raw.Subject); ok && !slices.Contains(held, suite) {
				held = append(held, suite)
			}
			if !strings.HasPrefix(raw.Subject, prefix) {
				return nil // another suite's: not this comparison's to judge
			}
			return fold(raw)
		})
		if err != nil {
			return nil, *bad, fileError{fmt.Errorf("%s: %w", s.given, err)}
		}
	}
	if l.Submitted == nil {
		return nil, *bad, fmt.Errorf("%s: suite %s was never submitted: %s has no suite.submitted of it; %s", s.given, s.suite, from, suitesHeld("it", held))
	}
	return l, *bad, nil
}

// newSuiteFold returns a suite's empty log, the messages left out of it,
// and the function that folds one message into them: a message that holds
// no fact of its subject is left out, as every reader of the log leaves
// it out.
func newSuiteFold(suite string) (*measure.Log, *[]bus.BadRecord, func(bus.Raw) error) {
	l := measure.NewLog(suite)
	bad := new([]bus.BadRecord)
	return l, bad, func(raw bus.Raw) error {
		f, err := raw.Fact()
		if err != nil {
			*bad = append(*bad, bus.BadRecord{Seq: raw.Seq, Subject: raw.Subject, Err: err})
			return nil
		}
		l.Apply(f)
		return nil
	}
}

// readSuiteLog folds one suite's facts from a store or a server.
func readSuiteLog(ctx context.Context, b *bus.Bus, suite string) (*measure.Log, error) {
	l, _, fold := newSuiteFold(suite)
	if _, err := b.Read(ctx, bus.ReadOptions{Filter: events.SuiteFilter(suite)}, fold); err != nil {
		return nil, fmt.Errorf("read suite %s: %w", suite, err)
	}
	return l, nil
}

// read folds the suite's facts from a store or a server, and lets it go.
// When missing says, after the read, that the suite is not there, it
// returns the suites that are (best effort: none when the listing fails).
func (s suiteSource) read(ctx context.Context, t *target, fold func(bus.Raw) error, missing func() bool) ([]string, error) {
	b, release, err := t.open(ctx)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", s.given, err)
	}
	defer release()
	if _, err := b.Read(ctx, bus.ReadOptions{Filter: events.SuiteFilter(s.suite)}, fold); err != nil {
		return nil, fmt.Errorf("%s: read suite %s: %w", s.given, s.suite, err)
	}
	if !missing() {
		return nil, nil
	}
	held, _ := b.SubmittedSuites(ctx)
	return held, nil
}

// submittedSuite returns the suite whose suite.submitted subject is the
// one given, if it is one.
func submittedSuite(subject string) (string, bool) {
	suite, run, kind, err := events.ParseFactSubject(subject)
	if err != nil || run != events.SuiteScope || kind != events.KindSuiteSubmitted {
		return "", false
	}
	return suite, true
}
