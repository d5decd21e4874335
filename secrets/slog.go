package secrets

import (
	"context"
	"fmt"
	"log/slog"
)

// NewHandler wraps a slog handler so that no secret reaches it: the
// message, every attribute key and string value (also inside groups, after
// resolving LogValuers) and the text of errors and other values are
// redacted before the inner handler sees the record. Wrapping twice is
// harmless.
func NewHandler(inner slog.Handler, r *Redactor) slog.Handler {
	return &handler{inner: inner, r: r}
}

type handler struct {
	inner slog.Handler
	r     *Redactor
}

func (h *handler) Enabled(ctx context.Context, l slog.Level) bool { return h.inner.Enabled(ctx, l) }

func (h *handler) Handle(ctx context.Context, rec slog.Record) error {
	if h.r.Len() == 0 {
		return h.inner.Handle(ctx, rec)
	}
	out := slog.NewRecord(rec.Time, rec.Level, h.r.Redact(rec.Message), rec.PC)
	rec.Attrs(func(a slog.Attr) bool {
		out.AddAttrs(h.attr(a))
		return true
	})
	return h.inner.Handle(ctx, out)
}

func (h *handler) WithAttrs(as []slog.Attr) slog.Handler {
	red := make([]slog.Attr, len(as))
	for i, a := range as {
		red[i] = h.attr(a)
	}
	return &handler{inner: h.inner.WithAttrs(red), r: h.r}
}

func (h *handler) WithGroup(name string) slog.Handler {
	return &handler{inner: h.inner.WithGroup(h.r.Redact(name)), r: h.r}
}

// attr redacts one attribute.
func (h *handler) attr(a slog.Attr) slog.Attr {
	if h.r.Len() == 0 {
		return a
	}
	a.Key = h.r.Redact(a.Key)
	v := a.Value.Resolve()
	switch v.Kind() {
	case slog.KindString:
		a.Value = slog.StringValue(h.r.Redact(v.String()))
	case slog.KindGroup:
		g := v.Group()
		red := make([]slog.Attr, len(g))
		for i, x := range g {
			red[i] = h.attr(x)
		}
		a.Value = slog.GroupValue(red...)
	case slog.KindAny:
		// An error, a Stringer or a struct: the inner handler would print
		// it; if that text holds a secret, log the redacted text instead.
		var text string
		if err, ok := v.Any().(error); ok {
			text = err.Error()
		} else {
			text = fmt.Sprintf("%+v", v.Any())
		}
		if red := h.r.Redact(text); red != text {
			a.Value = slog.StringValue(red)
		} else {
			a.Value = v
		}
	default:
		a.Value = v
	}
	return a
}
