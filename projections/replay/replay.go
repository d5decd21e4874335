// Package replay feeds projections from the committed log: the live stream
// (from the start, a sequence or a time, through an ordered consumer), a
// durable position kept in the POSITIONS bucket, or an exported file.
package replay

import (
	"context"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/factline/factline/bus"
	"github.com/factline/factline/events"
	"github.com/factline/factline/projections"
)

// Source yields stored messages in log order.
type Source interface {
	// Each calls fn for every message in order and returns the stream
	// sequence of the last one.
	Each(ctx context.Context, fn func(bus.Raw) error) (uint64, error)
}

// Stream reads the live FACTS stream.
func Stream(b *bus.Bus, opts bus.ReadOptions) Source { return streamSource{b, opts} }

type streamSource struct {
	b    *bus.Bus
	opts bus.ReadOptions
}

func (s streamSource) Each(ctx context.Context, fn func(bus.Raw) error) (uint64, error) {
	return s.b.Read(ctx, s.opts, fn)
}

// File reads an export written by bus.Export (factline export).
func File(path string) Source { return fileSource{path} }

type fileSource struct{ path string }

func (s fileSource) Each(ctx context.Context, fn func(bus.Raw) error) (uint64, error) {
	f, err := os.Open(s.path)
	if err != nil {
		return 0, fmt.Errorf("replay: %w", err)
	}
	defer f.Close()
	return Reader(f).Each(ctx, fn)
}

// Reader reads an export from r.
func Reader(r io.Reader) Source { return readerSource{r} }

type readerSource struct{ r io.Reader }

func (s readerSource) Each(ctx context.Context, fn func(bus.Raw) error) (uint64, error) {
	var last uint64
	err := bus.ReadExport(s.r, func(raw bus.Raw) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		last = raw.Seq
		return fn(raw)
	})
	return last, err
}

// Filter selects which facts reach the projection; nil keeps all.
type Filter func(events.Fact) bool

// Result says what a replay did.
type Result struct {
	Applied int             // facts folded into the projection
	Skipped int             // facts the filter left out
	Bad     []bus.BadRecord // messages that hold no fact of their subject (undecodable or forged), with the reason
	LastSeq uint64          // stream sequence of the last message read
}

// Run feeds every fact from src into in. Messages that do not decode, and
// facts stored under a subject that names another kind, suite or run
// (errors.Is events.ErrSubjectMismatch), are reported in Result.Bad and
// skipped; they never stop the replay.
func Run(ctx context.Context, src Source, in projections.Instance, keep Filter) (Result, error) {
	var res Result
	last, err := src.Each(ctx, func(raw bus.Raw) error {
		f, err := raw.Fact()
		if err != nil {
			res.Bad = append(res.Bad, bus.BadRecord{Seq: raw.Seq, Subject: raw.Subject, Err: err})
			return nil
		}
		if keep != nil && !keep(f) {
			res.Skipped++
			return nil
		}
		in.Apply(f)
		res.Applied++
		return nil
	})
	res.LastSeq = last
	if err != nil {
		return res, fmt.Errorf("replay after %d facts: %w", res.Applied, err)
	}
	return res, nil
}

// Resume feeds in with the facts after the position saved under name, then
// saves the new position. It is for projections whose state lives outside
// the process (an analyst's database, a report file): each call applies only
// what is new since the last one.
func Resume(ctx context.Context, b *bus.Bus, name string, in projections.Instance, opts bus.ReadOptions) (Result, error) {
	pos, err := b.LoadPosition(ctx, name)
	if err != nil {
		return Result{}, err
	}
	opts.FromSeq, opts.FromTime = pos+1, time.Time{}
	res, err := Run(ctx, Stream(b, opts), in, nil)
	if err != nil {
		return res, err
	}
	if res.LastSeq > pos {
		if err := b.SavePosition(ctx, name, res.LastSeq); err != nil {
			return res, err
		}
	}
	return res, nil
}
