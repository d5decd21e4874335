package bus

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// ErrRangeGap is what ReadRange returns when a sequence of its range is not
// there to get (deleted, or not yet on the replica that answered): the
// caller reads the rest with Read, which tells the two apart.
var ErrRangeGap = errors.New("a sequence of the range is not there")

// rangeChunk bounds the direct gets ReadRange has in flight at once.
const rangeChunk = 64

// ReadRange delivers, in stream order, the FACTS messages from sequence
// from through sequence through (both committed: a delivered fact's
// sequence) whose subject begins with prefix, fetching every sequence of
// the range by a direct get. Unlike Read it makes no consumer: creating
// one makes the server count what its filter has pending, which costs in
// the subjects of the stream's newest block, thousands on a long suite's
// stream, for every read. It suits a short range, of which it reads every
// message, whatever its subject. It returns the sequence of the last
// message it delivered (0 for none); ErrRangeGap when a sequence was not
// there, after delivering those before it.
func (b *Bus) ReadRange(ctx context.Context, prefix string, from, through uint64, fn func(Raw) error) (uint64, error) {
	if from == 0 {
		from = 1
	}
	if through < from {
		return 0, nil
	}
	g, err := b.newGetter()
	if err != nil {
		return 0, err
	}
	defer g.close()
	var last uint64
	for start := from; start <= through; start += rangeChunk {
		end := min(through, start+rangeChunk-1)
		for seq := start; seq <= end; seq++ {
			if err := g.send(directGetRequest{Seq: seq}); err != nil {
				return last, err
			}
		}
		got := make(map[uint64]*nats.Msg, end-start+1)
		gap := false
		for range end - start + 1 {
			m, found, err := g.receive(ctx)
			if err != nil {
				return last, err
			}
			if !found {
				gap = true
				continue
			}
			got[seqOf(m)] = m
		}
		for seq := start; seq <= end; seq++ {
			m, ok := got[seq]
			if !ok {
				if gap {
					return last, fmt.Errorf("read %s* at sequence %d: %w", prefix, seq, ErrRangeGap)
				}
				return last, fmt.Errorf("direct get: no answer for sequence %d", seq)
			}
			subj := m.Header.Get(jetstream.SubjectHeader)
			if !strings.HasPrefix(subj, prefix) {
				continue
			}
			at, _ := time.Parse(time.RFC3339Nano, m.Header.Get(jetstream.TimeStampHeaer))
			if err := fn(Raw{Seq: seq, Subject: subj, MsgID: m.Header.Get(jetstream.MsgIDHeader), Time: at, Data: m.Data}); err != nil {
				return last, err
			}
			last = seq
		}
	}
	return last, nil
}
