package telemetry

import (
	"context"
	"reflect"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

// Tracing starts a package's spans, and says when none could record. Its
// zero value starts none.
type Tracing struct {
	tracer trace.Tracer
	// off is set for the API's no-op provider: it never records.
	off bool
	// unset is the provider when it is the API's global one before any
	// SDK was installed: its spans record nothing, at the cost of an
	// allocation or two each, so none is started until
	// otel.GetTracerProvider returns something else — an SDK was
	// installed, and unset delegates to it.
	unset trace.TracerProvider
}

// NewTracing returns the tracing of the instrumentation scope scope with
// tp.
func NewTracing(tp trace.TracerProvider, scope string) Tracing {
	tr := Tracing{tracer: tp.Tracer(scope)}
	switch {
	case isNoop(tp):
		tr.off = true
	case isGlobalUnset(tp):
		tr.unset = tp
	}
	return tr
}

func isNoop(tp trace.TracerProvider) bool {
	_, ok := tp.(noop.TracerProvider)
	return ok
}

// The type of what otel.GetTracerProvider returns before an SDK is
// installed: a pointer to it.
const globalPkg, globalName = "go.opentelemetry.io/otel/internal/global", "tracerProvider"

// isGlobalUnset reports whether tp is what otel.GetTracerProvider
// returns before an SDK is installed. Should a later API move or rename
// its type, spans are started anyway: they cost allocations, never
// correctness (TestTheGlobalProviderIsToldApart says so first).
func isGlobalUnset(tp trace.TracerProvider) bool {
	t := reflect.TypeOf(tp)
	return t != nil && t.Kind() == reflect.Pointer &&
		t.Elem().PkgPath() == globalPkg && t.Elem().Name() == globalName
}

// On reports whether a span may record: callers start none, and build no
// attribute for one, when it is false. Comparing with the unset global, a
// pointer, never panics: values of other types are simply unequal.
func (tr *Tracing) On() bool {
	return tr.tracer != nil && !tr.off && (tr.unset == nil || otel.GetTracerProvider() != tr.unset)
}

// Tracer is the scope's tracer, for spans that are not new traces (a
// child of a recorded context, of the ctx's span). Check On first.
func (tr *Tracing) Tracer() trace.Tracer {
	return tr.tracer
}

// Start starts a span named name at start in a new trace, linked to the
// span of ctx if it has one, and returns ctx with it. A process's spans
// are caused by a long-lived ctx (a ticker's, a processor's pass) that
// would otherwise make them all one trace. Check On first: Start starts
// the span even when it records nothing.
func (tr *Tracing) Start(ctx context.Context, name string, start time.Time, attrs ...attribute.KeyValue) (context.Context, trace.Span) {
	return tr.tracer.Start(ctx, name, LinkedTo(ctx, trace.WithNewRoot(), trace.WithTimestamp(start), trace.WithAttributes(attrs...))...)
}

// LinkedTo returns opts with a link to the span of ctx, if it has one.
func LinkedTo(ctx context.Context, opts ...trace.SpanStartOption) []trace.SpanStartOption {
	if link := trace.LinkFromContext(ctx); link.SpanContext.IsValid() {
		opts = append(opts, trace.WithLinks(link))
	}
	return opts
}
