package main

import (
	"context"
	"fmt"
	"net/url"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/factline/factline/projections/spans"
	"github.com/factline/factline/version"
)

// exportTimeout bounds one OTLP export (and the final flush), retries
// included: a receiver that is down fails the command instead of
// holding it. A variable for tests.
var exportTimeout = 30 * time.Second

// spanExporter turns projected spans into OpenTelemetry SDK spans and
// sends them over OTLP/gRPC in batches. The SDK makes its own IDs; the
// span's come in through the context to factIDs, the provider's ID
// generator, so that what the receiver stores are the fact-derived IDs
// of the projection.
type spanExporter struct {
	tp     *sdktrace.TracerProvider
	tracer trace.Tracer
	spans  int
	traces map[spans.TraceID]bool
	// to is the receiver's URL as errors show it (without a password).
	to string
}

func newSpanExporter(ctx context.Context, endpoint *url.URL) (*spanExporter, error) {
	exp, err := otlptracegrpc.New(ctx,
		otlptracegrpc.WithEndpointURL(endpoint.String()),
		otlptracegrpc.WithTimeout(exportTimeout),
		otlptracegrpc.WithRetry(otlptracegrpc.RetryConfig{Enabled: true, InitialInterval: 500 * time.Millisecond, MaxInterval: 5 * time.Second, MaxElapsedTime: exportTimeout}),
	)
	if err != nil {
		return nil, fmt.Errorf("trace: OTLP exporter for %s: %w", redactURL(endpoint.String()), err)
	}
	res := resource.NewSchemaless(attribute.String("service.name", "factline"), attribute.String("service.version", version.Current().String()))
	tp := sdktrace.NewTracerProvider(
		sdktrace.WithResource(res),
		sdktrace.WithIDGenerator(factIDs{}),
		sdktrace.WithSampler(sdktrace.AlwaysSample()),
		// The projection's spans carry what the facts hold; the SDK's
		// default limits (128 attributes, events and links) hold them.
		sdktrace.WithBatcher(exp, sdktrace.WithBatchTimeout(time.Second), sdktrace.WithExportTimeout(exportTimeout)),
	)
	return &spanExporter{tp: tp, tracer: tp.Tracer("github.com/factline/factline/projections/spans"), traces: map[spans.TraceID]bool{},
		to: redactURL(endpoint.String())}, nil
}

// add records one projected span with its own IDs, times, attributes,
// events, links and status.
func (e *spanExporter) add(s spans.Span) {
	ctx := context.WithValue(context.Background(), spanIDsKey{}, s)
	opts := []trace.SpanStartOption{trace.WithTimestamp(s.Start), trace.WithAttributes(attrs(s.Attrs)...), trace.WithSpanKind(kindOf(s.Kind))}
	if s.Parent.IsZero() {
		opts = append(opts, trace.WithNewRoot())
	} else {
		ctx = trace.ContextWithSpanContext(ctx, trace.NewSpanContext(trace.SpanContextConfig{
			TraceID: trace.TraceID(s.Trace), SpanID: trace.SpanID(s.Parent), TraceFlags: trace.FlagsSampled,
		}))
	}
	for _, l := range s.Links {
		opts = append(opts, trace.WithLinks(trace.Link{SpanContext: trace.NewSpanContext(trace.SpanContextConfig{
			TraceID: trace.TraceID(l.Trace), SpanID: trace.SpanID(l.Span), TraceFlags: trace.FlagsSampled,
		}), Attributes: attrs(l.Attrs)}))
	}
	_, span := e.tracer.Start(ctx, s.Name, opts...)
	for _, ev := range s.Events {
		span.AddEvent(ev.Name, trace.WithTimestamp(ev.At), trace.WithAttributes(attrs(ev.Attrs)...))
	}
	if s.Status == spans.StatusError {
		span.SetStatus(codes.Error, s.StatusMessage)
	}
	span.End(trace.WithTimestamp(s.End))
	e.spans++
	e.traces[s.Trace] = true
}

// shutdown sends what is batched and closes the connection; an export
// that failed is its error.
func (e *spanExporter) shutdown(ctx context.Context) error {
	ferr := e.tp.ForceFlush(ctx)
	serr := e.tp.Shutdown(ctx)
	if ferr != nil {
		// The SDK's error says only that time ran out: where the spans
		// were to go is what an operator has to check.
		return fmt.Errorf("trace: send spans to %s (an OTLP/gRPC receiver; %s of retries): %w", e.to, exportTimeout, ferr)
	}
	if serr != nil {
		return fmt.Errorf("trace: close the exporter for %s: %w", e.to, serr)
	}
	return nil
}

// spanIDsKey carries the projected span whose IDs the SDK is to use.
type spanIDsKey struct{}

// factIDs is the provider's ID generator: the IDs of the projected span
// in the context. The SDK calls NewIDs for a root and NewSpanID for a
// child (with the parent's trace ID, which is the span's own).
type factIDs struct{}

func (factIDs) NewIDs(ctx context.Context) (trace.TraceID, trace.SpanID) {
	s, _ := ctx.Value(spanIDsKey{}).(spans.Span)
	return trace.TraceID(s.Trace), trace.SpanID(s.ID)
}

func (factIDs) NewSpanID(ctx context.Context, _ trace.TraceID) trace.SpanID {
	s, _ := ctx.Value(spanIDsKey{}).(spans.Span)
	return trace.SpanID(s.ID)
}

func kindOf(k spans.Kind) trace.SpanKind {
	if k == spans.KindClient {
		return trace.SpanKindClient
	}
	return trace.SpanKindInternal
}

func attrs(as []spans.Attr) []attribute.KeyValue {
	out := make([]attribute.KeyValue, 0, len(as))
	for _, a := range as {
		switch v := a.Value; v.Type {
		case spans.TypeString:
			out = append(out, attribute.String(a.Key, v.Str))
		case spans.TypeInt:
			out = append(out, attribute.Int64(a.Key, v.Int))
		case spans.TypeBool:
			out = append(out, attribute.Bool(a.Key, v.Bool))
		case spans.TypeFloat:
			out = append(out, attribute.Float64(a.Key, v.Float))
		case spans.TypeStrings:
			out = append(out, attribute.StringSlice(a.Key, v.Strings))
		}
	}
	return out
}
