// Package scripted is a deterministic model driven by a YAML script, for
// examples, tests and benchmarks. Turn n of a run gets turn n of the script:
// its text, tool calls, usage, finish reason, a typed error or a delay, or,
// when the request holds a text one of the turn's branches names, that
// branch's reply. The script format is documented in
// docs/scripted-model.md.
package scripted

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/factline/factline/internal/sleep"
	"github.com/factline/factline/models"
)

// Provider is the provider name of scripted models.
const Provider = "scripted"

// DefaultName is the model name of a script that names none.
const DefaultName = "script"

// Model replays a parsed script. Its script is immutable once parsed and
// it is safe for concurrent use: it answers by Request.Turn (and the
// request's messages, for a turn with branches), and the only
// state it keeps between calls is Render's cache of messages it rendered
// before, which never changes what Render returns.
type Model struct {
	name     string
	turns    []turn
	rendered renderCache
}

// turn is one validated script turn.
type turn struct {
	text       string
	calls      []models.ToolCall
	usage      *models.Usage
	reserve    uint64
	finish     string
	errKind    models.ErrorKind // "" for a reply
	retryAfter time.Duration
	delay      time.Duration
	// branches are the turn's alternative replies, in order: the first
	// whose when occurs in a message of the request answers instead.
	branches []turn
	// when is a branch's selecting text ("" for a turn).
	when string
}

// reply picks what the turn answers req: the first branch whose text
// occurs in the content of one of the request's messages, else the turn
// itself. Content is what the model reads (the task, tool results, the
// harness's feedback); a call's arguments are not searched.
func (t turn) reply(req models.Request) turn {
	for _, b := range t.branches {
		for _, msg := range req.Messages {
			if strings.Contains(msg.Content, b.when) {
				return b
			}
		}
	}
	return t
}

var _ models.Model = (*Model)(nil)

// Name is the model name the script gives (DefaultName when it gives none).
// Replies carry it in Reply.Model.
func (m *Model) Name() string { return m.name }

// Len is the number of turns in the script. Complete answers turns 1..Len
// and returns an ErrExhausted error beyond.
func (m *Model) Len() int { return len(m.turns) }

// Provider returns "scripted".
func (m *Model) Provider() string { return Provider }

// Reserve returns the reserve the script gives turn req.Turn (the
// branch's, when one answers req), 0 for a turn outside the script.
func (m *Model) Reserve(req models.Request) uint64 {
	if req.Turn < 1 || req.Turn > len(m.turns) {
		return 0
	}
	return m.turns[req.Turn-1].reply(req).reserve
}

// Complete answers with script turn req.Turn (1-based), or with the first
// of its branches whose text occurs in a message of req. It first waits the
// turn's delay, if any, honouring ctx: when ctx ends first (or had already
// ended) it returns an error wrapping ctx.Err(), which is a *models.Error of
// kind ErrTimeout when ctx's deadline passed. A turn with an error returns a
// *models.Error of that kind (Attempts 1, RetryAfter as scripted). A turn
// beyond the script returns ErrExhausted; a turn below 1 ErrBadRequest.
// The request's output format has no effect; its tool choice none,
// required or a forced tool makes a turn whose calls it rules out an
// ErrBadResponse naming the turn.
// Replies are fresh copies: callers may modify them.
func (m *Model) Complete(ctx context.Context, req models.Request) (models.Reply, error) {
	if req.Turn < 1 {
		return models.Reply{}, &models.Error{Kind: models.ErrBadRequest, Provider: Provider,
			Err: fmt.Errorf("turn %d: turns are 1-based", req.Turn)}
	}
	if req.Turn > len(m.turns) {
		return models.Reply{}, &models.Error{Kind: models.ErrExhausted, Provider: Provider,
			Err: fmt.Errorf("turn %d: the script has %d turns", req.Turn, len(m.turns))}
	}
	t := m.turns[req.Turn-1].reply(req)
	if err := sleep.For(ctx, t.delay); err != nil {
		return models.Reply{}, contextError(req.Turn, err)
	}
	if t.errKind != "" {
		return models.Reply{}, &models.Error{Kind: t.errKind, Provider: Provider, Attempts: 1,
			RetryAfter: t.retryAfter, Err: fmt.Errorf("turn %d: scripted %s error", req.Turn, t.errKind)}
	}
	if err := obeyChoice(req.Turn, t.calls, req.ToolChoice); err != nil {
		return models.Reply{}, err
	}
	reply := models.Reply{Text: t.text, Finish: t.finish, Model: m.name}
	if len(t.calls) > 0 {
		reply.Calls = append([]models.ToolCall(nil), t.calls...)
	}
	if t.usage != nil {
		u := *t.usage
		if u.Cost != nil {
			c := *u.Cost
			u.Cost = &c
		}
		reply.Usage = &u
	}
	return reply, nil
}

// contextError maps the end of ctx: a passed deadline is a timeout, a
// cancellation stays a plain (wrapped) context.Canceled.
func contextError(turn int, err error) error {
	if errors.Is(err, context.DeadlineExceeded) {
		return &models.Error{Kind: models.ErrTimeout, Provider: Provider, Attempts: 1,
			Err: fmt.Errorf("turn %d: %w", turn, err)}
	}
	return fmt.Errorf("scripted: turn %d: %w", turn, err)
}
