package meter

import (
	"context"
	"errors"

	"github.com/factline/factline/bus"
	"github.com/factline/factline/events"
	"github.com/factline/factline/services/meter/measure"
)

// maxInFlight bounds the requests a meter has appended and not yet had
// answered: enough to keep the server's appends back to back, few enough
// that an answer lost with a stream leader costs a short replay.
const maxInFlight = 256

// pipeline appends a window of run.requested facts without waiting for
// each answer before the next, and takes the answers in roster order:
// st.next moves past an attempt only once it and every one before it is
// known committed, so a meter that fails or dies mid-window requests
// again from the first attempt it is not sure of, and its message IDs and
// the empty-run condition keep that from requesting anything twice.
type pipeline struct {
	s  *Service
	st *suiteState
	// q holds the attempts sent or known, oldest first, not yet taken.
	q []sent
	// requested counts the requests this pipeline committed (not the
	// ones it found committed).
	requested int
	// err is the first failure: the answers after it are still taken,
	// but st.next stays before it.
	err error
}

// sent is one attempt in the pipeline: its append in flight, or nil for
// an attempt the count knows requested.
type sent struct {
	i    uint64
	m    measure.Member
	body events.RunRequested
	a    *bus.AsyncAppend
}

func newPipeline(s *Service, st *suiteState) *pipeline { return &pipeline{s: s, st: st} }

// known passes over attempt i, which the count has seen requested.
func (p *pipeline) known(ctx context.Context, i uint64) error {
	p.q = append(p.q, sent{i: i})
	return p.bound(ctx)
}

// send appends attempt i's request on the condition that its run holds
// nothing yet.
func (p *pipeline) send(ctx context.Context, i uint64, m measure.Member, body events.RunRequested) error {
	f, err := p.s.requestFact(p.st, m, 1, body)
	if err != nil {
		return errors.Join(err, p.drain(ctx))
	}
	a, err := p.s.sh.Bus.AppendAsync(bus.Expect{}, bus.Pending{Fact: f, MsgID: measure.RequestMsgID(m.Run)})
	if err != nil {
		// Not sent (the connection is down, or the fact does not encode):
		// once the answers before it are in, the ordinary path tries
		// it and says what failed.
		if err := p.drain(ctx); err != nil {
			return err
		}
		requested, err := p.s.commitRequest(ctx, p.st, m, body)
		if err != nil {
			return err
		}
		if requested {
			p.requested++
		}
		p.st.next = i + 1
		return nil
	}
	p.q = append(p.q, sent{i: i, m: m, body: body, a: a})
	return p.bound(ctx)
}

// bound takes the oldest answers while more than maxInFlight are out.
func (p *pipeline) bound(ctx context.Context) error {
	for len(p.q) > maxInFlight {
		p.take(ctx)
	}
	return p.err
}

// drain takes every answer still out and returns the first failure.
func (p *pipeline) drain(ctx context.Context) error {
	for len(p.q) > 0 {
		p.take(ctx)
	}
	return p.err
}

// take takes the oldest attempt's answer. One the run's condition
// refused (the run holds a fact: most likely its request, by another
// instance or an earlier try), or that did not come, is committed again
// the ordinary way, which reads the run and requests it only if it is not.
func (p *pipeline) take(ctx context.Context) {
	x := p.q[0]
	p.q = p.q[1:]
	if x.a != nil {
		rec, err := x.a.Wait(ctx)
		switch {
		case err == nil:
			if !rec.Duplicate {
				p.requested++
			}
		case ctx.Err() != nil:
			p.fail(err)
		default:
			if !errors.Is(err, bus.ErrConflict) {
				p.s.sh.Log.Warn("a pipelined request failed; committing it again", "suite", p.st.suite, "run", x.m.Run, "err", err)
			}
			requested, err := p.s.commitRequest(ctx, p.st, x.m, x.body)
			if err != nil {
				p.fail(err)
			} else if requested {
				p.requested++
			}
		}
	}
	if p.err == nil {
		// Committed now, or before: every attempt up to this one is.
		p.st.next = x.i + 1
	}
}

func (p *pipeline) fail(err error) {
	if p.err == nil {
		p.err = err
	}
}
