package telemetrytest

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

// SpanRecorder returns a tracer provider whose spans the test reads back
// from the exporter, each as it ends (a syncer, not a batcher: nothing
// waits to be exported), shut down when the test ends.
func SpanRecorder(t testing.TB) (*sdktrace.TracerProvider, *tracetest.InMemoryExporter) {
	t.Helper()
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	t.Cleanup(func() { require.NoError(t, tp.Shutdown(context.Background())) })
	return tp, exp
}

// Attrs are a span's attributes by key.
func Attrs(s tracetest.SpanStub) map[attribute.Key]attribute.Value {
	out := map[attribute.Key]attribute.Value{}
	for _, kv := range s.Attributes {
		out[kv.Key] = kv.Value
	}
	return out
}

// SpansNamed returns the exported spans called name, in the order they
// ended.
func SpansNamed(exp *tracetest.InMemoryExporter, name string) []tracetest.SpanStub {
	var out []tracetest.SpanStub
	for _, s := range exp.GetSpans() {
		if s.Name == name {
			out = append(out, s)
		}
	}
	return out
}
