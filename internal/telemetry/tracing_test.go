package telemetry

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"
)

// The global provider before an SDK is installed, and the API's no-op
// one, record nothing: On says so, without allocating. The global one
// records once an SDK is installed in it, and an SDK's provider always.
// Should the API rename its placeholder's type, the first assertion
// fails here, before the packages' allocation tests do.
func TestTheGlobalProviderIsToldApart(t *testing.T) {
	global := NewTracing(otel.GetTracerProvider(), "test")
	noop := NewTracing(tracenoop.NewTracerProvider(), "test")
	var zero Tracing
	require.False(t, global.On(), "the global provider without an SDK")
	require.False(t, noop.On(), "the no-op provider")
	require.False(t, zero.On(), "the zero Tracing")
	require.Zero(t, testing.AllocsPerRun(100, func() { global.On(); noop.On() }))

	exp := tracetest.NewInMemoryExporter()
	sdk := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	t.Cleanup(func() { require.NoError(t, sdk.Shutdown(context.Background())) })
	sdkTracing := NewTracing(sdk, "test")
	require.True(t, sdkTracing.On(), "an SDK's provider")
	otel.SetTracerProvider(sdk)
	require.True(t, global.On(), "the global provider once an SDK is installed")
	require.False(t, noop.On())
}

// Start begins a new trace linked to the span of its ctx, stamped at the
// given time, with the attributes given.
func TestStartBeginsATraceLinkedToTheCaller(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	sdk := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	t.Cleanup(func() { require.NoError(t, sdk.Shutdown(context.Background())) })
	tr := NewTracing(sdk, "test")
	at := time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC)

	callerCtx, caller := sdk.Tracer("caller").Start(context.Background(), "caller")
	ctx, span := tr.Start(callerCtx, "linked", at)
	require.Equal(t, span.SpanContext(), trace.SpanContextFromContext(ctx), "ctx carries the span")
	End(span, nil, at.Add(time.Second))
	caller.End()
	_, unlinked := tr.Start(context.Background(), "unlinked", at)
	End(unlinked, context.Canceled, at)

	spans := exp.GetSpans()
	require.Len(t, spans, 3)
	linked := spans[0]
	require.Equal(t, "linked", linked.Name)
	require.NotEqual(t, caller.SpanContext().TraceID(), linked.SpanContext.TraceID(), "a new trace")
	require.False(t, linked.Parent.IsValid(), "a root")
	require.Len(t, linked.Links, 1)
	require.True(t, linked.Links[0].SpanContext.Equal(caller.SpanContext()))
	require.Equal(t, at, linked.StartTime)
	require.Equal(t, at.Add(time.Second), linked.EndTime)
	require.Empty(t, spans[2].Links, "no span in ctx, no link")
	require.Equal(t, "Error", spans[2].Status.Code.String())
	require.Len(t, spans[2].Events, 1, "the error recorded")
}
