package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/factline/factline/bus"
	"github.com/factline/factline/events"
)

// need is a subject a command must be allowed to publish on, and why.
type need struct {
	subject string
	why     string
}

// Tokens of the subjects probes publish on. No fact is ever stored there.
const (
	probeSuite = "factline-probe"
	probeRun   = "probe"
)

// serviceNeeds lists what a service publishes: the kinds it owns (by the
// events registry), its dead letters, and its blobs and live status where
// it writes them.
func serviceNeeds(service string) []need {
	var out []need
	for _, k := range events.Kinds() {
		if string(k.Owner()) != service {
			continue
		}
		run := probeRun
		if k.SuiteScoped() {
			run = events.SuiteScope
		}
		subj, err := events.FactSubject(probeSuite, run, k)
		if err != nil {
			continue
		}
		out = append(out, need{subj, fmt.Sprintf("by %s to append %s", service, k)})
	}
	out = append(out, need{bus.DeadSubject(bus.FactsStream, service), "by " + service + " to dead-letter what it cannot use"})
	switch service {
	case "runner":
		subj, _ := events.StatusSubject(probeSuite, probeRun)
		out = append(out, need{subj, "by runner to publish live status"}, blobNeed("runner"))
	case "meter":
		out = append(out, blobNeed("meter"))
	}
	return out
}

// submitterNeeds lists what "factline run --nats" publishes.
func submitterNeeds() []need {
	subj, _ := events.FactSubject(probeSuite, events.SuiteScope, events.KindSuiteSubmitted)
	return []need{{subj, "to submit a suite"}, blobNeed("the submitter")}
}

func blobNeed(who string) need {
	return need{"$O." + bus.BlobBucket + ".C." + probeRun, "by " + who + " to store blobs"}
}

// probeTimeout bounds one probe: a refused publish gets no answer at all.
const probeTimeout = 5 * time.Second

// probe checks, before a command starts its work, that its identity may
// publish on every subject it will need, so that a role missing a
// permission fails at once with the subject named rather than hours later
// mid-run. Each probe is a JetStream publish that expects a last subject
// sequence no subject can have: a stream that accepts the subject refuses
// to store it (and says so), while a server that denies the subject reports
// a permissions violation. Nothing is ever written.
func probe(ctx context.Context, b *bus.Bus, g *guard, needs []need) error {
	for _, n := range needs {
		if err := probeOne(ctx, b, g, n); err != nil {
			return err
		}
	}
	return nil
}

func probeOne(ctx context.Context, b *bus.Bus, g *guard, n need) error {
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	return g.probe(n.subject, n.why, func() error { return b.ProbePublish(ctx, n.subject) }, func(err error) error {
		if errors.Is(err, bus.ErrStreamMissing) {
			return fmt.Errorf("no stream stores %s (needed %s): set the account up first (factline setup)", n.subject, n.why)
		}
		return fmt.Errorf("check permission to publish %s (needed %s): %w", n.subject, n.why, err)
	})
}

// probe runs send, a request on subject, and returns as soon as the
// server says the identity may not use subject (a permissions violation,
// which reaches the guard and not send's answer, naming need) or send
// answers: nil when it succeeded (something answered: the subject is
// allowed), else fail's error for what it answered.
func (g *guard) probe(subject, need string, send func() error, fail func(error) error) error {
	res := make(chan error, 1)
	go func() { res <- send() }()
	denied := func() error {
		if pe := g.deniedFor(subject); pe != nil {
			pe.Need = need
			return pe
		}
		return nil
	}
	for {
		select {
		case err := <-res:
			if err == nil {
				return nil
			}
			if d := denied(); d != nil {
				return d
			}
			return fail(err)
		case <-g.notify:
			if d := denied(); d != nil {
				return d
			}
		}
	}
}

// setupStreams are the streams setup makes and changes: the log's, and
// those under the buckets.
var setupStreams = []string{bus.FactsStream, bus.ControlStream, bus.DeadStream,
	"KV_" + bus.PositionsBucket, "KV_" + bus.CacheBucket, "KV_" + bus.LimitsBucket, "OBJ_" + bus.BlobBucket}

// mayManageStreams checks that the command's identity may change each of
// setupStreams, the admin role's work. Each probe is a stream update whose
// body names another stream: a server that allows the subject refuses
// that request with an error and changes nothing, while one that denies it
// reports a permissions violation.
func (t *target) mayManageStreams(ctx context.Context, b *bus.Bus) error {
	if t.guard == nil {
		return nil // an embedded store's own credential may do anything
	}
	for _, name := range setupStreams {
		if err := probeStreamUpdate(ctx, b, t.guard, name); err != nil {
			return err
		}
	}
	return nil
}

func probeStreamUpdate(ctx context.Context, b *bus.Bus, g *guard, stream string) error {
	subject := "$JS.API.STREAM.UPDATE." + stream
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	need := "by setup to make and change stream " + stream + "; only the admin role manages streams: run 'factline setup' as admin"
	return g.probe(subject, need, func() error {
		_, err := b.Conn().RequestWithContext(ctx, subject, []byte(`{"name":"`+probeSuite+`"}`))
		return err
	}, func(err error) error {
		return fmt.Errorf("check permission to change stream %s (%s): %w", stream, subject, err)
	})
}
