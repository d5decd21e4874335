// Package spans projects the log onto trace spans: a span per suite, run,
// turn, model call, tool dispatch and grade instrument, with the facts'
// own times, and trace and span IDs derived from the facts' IDs, so that
// projecting the same log twice gives the same spans, IDs included.
//
// It is a pure fold (no I/O, no NATS, no OpenTelemetry SDK): the spans it
// returns are plain values that a shell (factline trace) hands to an
// OTLP exporter. The attribute names follow the OpenTelemetry GenAI
// semantic conventions where one exists and are prefixed factline.
// otherwise (docs/traces.md).
package spans

import (
	"encoding/hex"
	"time"
)

// TraceID identifies a trace: 16 bytes, as in W3C Trace Context.
type TraceID [16]byte

// SpanID identifies a span within its trace: 8 bytes.
type SpanID [8]byte

// String is the lower-case hex form (what Jaeger and OTLP/JSON show).
func (t TraceID) String() string { return hex.EncodeToString(t[:]) }

// String is the lower-case hex form.
func (s SpanID) String() string { return hex.EncodeToString(s[:]) }

// IsZero reports whether s is the zero ID, which names no span (a root
// span's parent).
func (s SpanID) IsZero() bool { return s == SpanID{} }

// Kind is a span's kind, as OpenTelemetry names them.
type Kind uint8

// The kinds the projection makes: a model call is a client call to the
// provider; everything else happens inside factline.
const (
	KindInternal Kind = iota
	KindClient
)

// Status is a span's status code.
type Status uint8

// Status codes: Unset unless the facts say something failed.
const (
	StatusUnset Status = iota
	StatusError
)

// ValueType says which field of a Value holds it.
type ValueType uint8

// Value types, the subset of OpenTelemetry's attribute types the
// projection uses.
const (
	TypeString ValueType = iota
	TypeInt
	TypeBool
	TypeFloat
	TypeStrings
)

// Value is an attribute's value.
type Value struct {
	Type    ValueType
	Str     string
	Int     int64
	Bool    bool
	Float   float64
	Strings []string
}

// Attr is one span, event or link attribute.
type Attr struct {
	Key   string
	Value Value
}

// Str is a string attribute.
func Str(k, v string) Attr { return Attr{k, Value{Type: TypeString, Str: v}} }

// Int is an integer attribute. Counts in facts are unsigned; every one
// the projection reads fits an int64.
func Int[N ~int | ~int64 | ~uint32 | ~uint64 | ~uint16](k string, v N) Attr {
	return Attr{k, Value{Type: TypeInt, Int: int64(v)}}
}

// Bool is a boolean attribute.
func Bool(k string, v bool) Attr { return Attr{k, Value{Type: TypeBool, Bool: v}} }

// Float is a floating-point attribute.
func Float(k string, v float64) Attr { return Attr{k, Value{Type: TypeFloat, Float: v}} }

// Strs is a string-array attribute.
func Strs(k string, v ...string) Attr { return Attr{k, Value{Type: TypeStrings, Strings: v}} }

// Event is a point in time within a span: a fact that has no span of its
// own (a claim, a control accepted, a stall observed).
type Event struct {
	Name  string
	At    time.Time
	Attrs []Attr
}

// Link points at a span in another trace: a run's span links to its
// suite's.
type Link struct {
	Trace TraceID
	Span  SpanID
	Attrs []Attr
}

// Span is one finished span.
type Span struct {
	Trace  TraceID
	ID     SpanID
	Parent SpanID // zero for a trace's root
	Name   string
	Kind   Kind
	Start  time.Time
	End    time.Time
	Attrs  []Attr
	Events []Event
	Links  []Link
	Status Status
	// StatusMessage says what failed, when Status is StatusError.
	StatusMessage string
}

// Attr returns the value of the attribute named key and whether the span
// has it.
func (s Span) Attr(key string) (Value, bool) {
	for _, a := range s.Attrs {
		if a.Key == key {
			return a.Value, true
		}
	}
	return Value{}, false
}
